//! Calendar dates as `YYYY-MM-DD`.

use time::Date;
use time::macros::format_description;

/// Parse a strict `YYYY-MM-DD` date.
pub fn parse(text: &str) -> Option<Date> {
    if text.len() != 10 {
        return None;
    }
    Date::parse(text, format_description!("[year]-[month]-[day]")).ok()
}

/// Format a date as `YYYY-MM-DD`.
pub(crate) fn format(date: Date) -> String {
    date.format(format_description!("[year]-[month]-[day]"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn strict() {
        let d = super::parse("2026-11-30").unwrap();
        assert_eq!(super::format(d), "2026-11-30");
        assert!(super::parse("2026-02-30").is_none());
        assert!(super::parse("2026-1-30").is_none());
    }
}
