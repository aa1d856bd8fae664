//! Widening: a person applies a rule more widely than where it was seen,
//! in review (`kapi context review --keep <id> --widen-to <where>`, or
//! `--widen <id> --widen-to <where>` for a rule already in force).
//!
//! The steps nest:
//!
//! | `--widen-to` | what the scope drops | where the rule then holds |
//! |---|---|---|
//! | an axis (`channel`) | that axis (`product` drops the profile too) | every value of the axis, at the rest of the point |
//! | `project` | the axes a `[[points]]` entry derives from the file (`product`, `channel`, `profile`) | every point of the project |
//! | `workspace` | those axes, and the project | every repository registered with kapi on this machine |
//!
//! An axis no file derives (a brand, a market) stays through project and
//! workspace. A note widens at most to its project. This module computes
//! the wider scope; it never compares scopes (that is `Scope::covers` and
//! `Scope::overlaps`).

use super::record::Scope;

/// The axes a `[[points]]` entry derives from the file a rule was seen in:
/// what widening to the project drops (the profile governing there too).
pub const FILE_AXES: [&str; 3] = ["product", "channel", "profile"];

/// Where a person widens a rule to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WidenTo {
    /// Every value of one axis, at the rest of the point.
    Axis(String),
    /// Every point of the project.
    Project,
    /// Every repository registered with kapi on this machine.
    Workspace,
}

impl WidenTo {
    /// `project`, `workspace`, or an axis name.
    pub fn parse(text: &str) -> Result<WidenTo, WidenError> {
        let text = text.trim();
        match text {
            "" => Err(WidenError::Empty),
            "project" => Ok(WidenTo::Project),
            "workspace" => Ok(WidenTo::Workspace),
            axis => Ok(WidenTo::Axis(axis.to_owned())),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            WidenTo::Axis(axis) => format!("every {axis}"),
            WidenTo::Project => "the whole project".into(),
            WidenTo::Workspace => "every repository of the workspace".into(),
        }
    }
}

/// Why a rule cannot be widened as asked; nothing is recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WidenError {
    #[error("--widen-to names nothing: give an axis, `project` or `workspace`")]
    Empty,
    #[error(
        "a note widens at most to its project: the workspace holds term rules only (`--widen-to project`)"
    )]
    NoteBeyondProject,
    #[error("it does not hold at one {axis} only, so there is nothing to widen on that axis{}", held(.axes))]
    AxisNotSet { axis: String, axes: Vec<String> },
    #[error("it already holds across the workspace, the widest a rule can hold")]
    AlreadyWorkspace,
    #[error("it already holds at every point of the project its other axes allow{}", held(.axes))]
    AlreadyProject { axes: Vec<String> },
}

fn held(axes: &[String]) -> String {
    if axes.is_empty() {
        String::new()
    } else {
        format!(" (it holds at {})", axes.join(", "))
    }
}

fn axes_of(scope: &Scope) -> Vec<String> {
    super::scope::pairs(&scope.point)
}

/// The scope `scope` widens to, or why it cannot: a widening that changes
/// nothing is refused, so a decision always says something.
pub fn widened(scope: &Scope, to: &WidenTo, note: bool) -> Result<Scope, WidenError> {
    let mut wider = scope.clone();
    match to {
        WidenTo::Axis(axis) => {
            if wider.point.remove(axis).is_none() {
                return Err(WidenError::AxisNotSet {
                    axis: axis.clone(),
                    axes: axes_of(scope),
                });
            }
            // A profile governs one product's pages: every product is
            // beyond it.
            if axis == "product" {
                wider.point.remove("profile");
            }
        }
        WidenTo::Project => {
            if scope.workspace {
                return Err(WidenError::AlreadyWorkspace);
            }
            let dropped = FILE_AXES
                .iter()
                .filter(|a| wider.point.remove(**a).is_some())
                .count();
            if dropped == 0 {
                return Err(WidenError::AlreadyProject {
                    axes: axes_of(scope),
                });
            }
        }
        WidenTo::Workspace => {
            if note {
                return Err(WidenError::NoteBeyondProject);
            }
            if scope.workspace {
                return Err(WidenError::AlreadyWorkspace);
            }
            for axis in FILE_AXES {
                wider.point.remove(axis);
            }
            wider.workspace = true;
        }
    }
    Ok(wider)
}

/// Whether some widening would change `scope` (a digest item's
/// `widenable`).
pub fn widenable(scope: &Scope, note: bool) -> bool {
    let to_axis = scope
        .point
        .keys()
        .next()
        .is_some_and(|a| widened(scope, &WidenTo::Axis(a.clone()), note).is_ok());
    to_axis
        || widened(scope, &WidenTo::Project, note).is_ok()
        || widened(scope, &WidenTo::Workspace, note).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(pairs: &[(&str, &str)]) -> Scope {
        Scope {
            point: pairs
                .iter()
                .map(|(a, v)| (a.to_string(), v.to_string()))
                .collect(),
            ..Scope::default()
        }
    }

    #[test]
    fn the_steps_nest() {
        let seen = Scope {
            valid_from: Some("2027-01-01".into()),
            ..at(&[
                ("product", "quickcast"),
                ("channel", "app"),
                ("brand", "acme"),
            ])
        };
        let channel = widened(&seen, &WidenTo::Axis("channel".into()), false).unwrap();
        assert_eq!(
            channel.point,
            at(&[("product", "quickcast"), ("brand", "acme")]).point
        );
        assert_eq!(channel.valid_from.as_deref(), Some("2027-01-01"));
        let project = widened(&channel, &WidenTo::Project, false).unwrap();
        assert_eq!(project.point, at(&[("brand", "acme")]).point);
        assert!(!project.workspace);
        let workspace = widened(&project, &WidenTo::Workspace, false).unwrap();
        assert!(workspace.workspace);
        assert_eq!(
            workspace.point,
            at(&[("brand", "acme")]).point,
            "a brand stays"
        );
        // Nothing wider than the workspace; nothing narrower after it.
        assert_eq!(
            widened(&workspace, &WidenTo::Workspace, false),
            Err(WidenError::AlreadyWorkspace)
        );
        assert_eq!(
            widened(&workspace, &WidenTo::Project, false),
            Err(WidenError::AlreadyWorkspace)
        );
        // Straight to the workspace drops the file's axes too.
        let direct = widened(&seen, &WidenTo::Workspace, false).unwrap();
        assert_eq!(direct, workspace_with(&seen));
    }

    #[test]
    fn the_profile_goes_with_the_product_and_the_project() {
        let seen = at(&[("product", "quickcast"), ("profile", "handbook")]);
        let every_product = widened(&seen, &WidenTo::Axis("product".into()), false).unwrap();
        assert!(every_product.point.is_empty());
        let project = widened(&at(&[("profile", "handbook")]), &WidenTo::Project, false).unwrap();
        assert!(project.point.is_empty());
    }

    fn workspace_with(seen: &Scope) -> Scope {
        Scope {
            point: at(&[("brand", "acme")]).point,
            workspace: true,
            ..seen.clone()
        }
    }

    #[test]
    fn a_widening_that_changes_nothing_is_refused() {
        let project_wide = at(&[("market", "no")]);
        assert!(matches!(
            widened(&project_wide, &WidenTo::Project, false),
            Err(WidenError::AlreadyProject { .. })
        ));
        assert!(matches!(
            widened(&project_wide, &WidenTo::Axis("channel".into()), false),
            Err(WidenError::AxisNotSet { .. })
        ));
        assert!(widened(&project_wide, &WidenTo::Axis("market".into()), false).is_ok());
        assert!(widenable(&project_wide, true));
        assert!(!widenable(&Scope::default(), true), "a note at its project");
        assert!(
            widenable(&Scope::default(), false),
            "a rule to the workspace"
        );
    }

    #[test]
    fn a_note_widens_at_most_to_its_project() {
        let seen = at(&[("product", "quickcast")]);
        assert_eq!(
            widened(&seen, &WidenTo::Workspace, true),
            Err(WidenError::NoteBeyondProject)
        );
        assert!(widened(&seen, &WidenTo::Project, true).is_ok());
        assert_eq!(WidenTo::parse("project"), Ok(WidenTo::Project));
        assert_eq!(
            WidenTo::parse(" channel "),
            Ok(WidenTo::Axis("channel".into()))
        );
        assert_eq!(WidenTo::parse(""), Err(WidenError::Empty));
    }
}
