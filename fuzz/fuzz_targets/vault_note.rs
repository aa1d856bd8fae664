//! A vault note from untrusted bytes: its front matter, and its body read
//! as an evidence register, a review log and a decision log.
#![no_main]
use std::collections::BTreeSet;

use kapi::vault::note::Meta;
use kapi::vault::{Grant, Sensitivity, evidence, frontmatter, review, table};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (floor, offset) = match frontmatter::parse(data) {
        Ok(fm) => {
            let meta = Meta::from_front_matter(&fm, "fuzz.md");
            (meta.sensitivity, fm.body_offset)
        }
        Err(_) => (Meta::unreadable().sensitivity, 0),
    };
    let body = String::from_utf8_lossy(data.get(offset..).unwrap_or_default());
    for grant in [Grant::public(), Grant::up_to(Sensitivity::Restricted)] {
        let t = table::parse_kept(&body, |columns, row| {
            let label = columns.iter().position(|c| c == "sensitivity");
            grant.permits(Sensitivity::of_row(floor, label.map(|c| row[c].as_str())))
        });
        let rows = evidence::project(&t, floor, "evidence.md", &grant, None);
        let _ = evidence::resolve_replacements(rows);
        let notes = BTreeSet::from(["a.md".to_string()]);
        let reviews = review::select(&t, floor, &grant, "outcome", &review::OUTCOMES, &notes);
        let _ = review::finish(reviews);
        let events = review::select(&t, floor, &grant, "event", &review::EVENTS, &notes);
        let _ = review::finish(events);
    }
});
