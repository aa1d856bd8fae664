//! Sharing the log with another repository: fetch its `refs/kapi/ops`
//! into a tracking ref, merge it into ours by union, push ours back
//! fast-forward only. `refs/kapi/local` never leaves the machine.
//!
//! The merge is deterministic: two machines merging the same two tips
//! write the same commit (the union tree, the parents in id order, kapi's
//! own signature at the later parent's time, a fixed message), so whichever
//! merges first, the other's push finds the remote already holding it.

use gix::ObjectId;

use super::reflock::Moved;
use super::{LogRef, Store, StoreError, git, intake, lock, pack, write_commit};
use crate::git::{GitError, Pushed};
use crate::ops::OpId;

const MERGE_MESSAGE: &str = "kapi: merge by union\n";

/// Why talking to a remote failed.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("`{0}` is not a remote name or URL kapi can fetch from")]
    BadRemote(String),
    #[error("cannot fetch refs/kapi/ops from {remote}: {message}")]
    Fetch { remote: String, message: String },
    #[error("cannot push refs/kapi/ops to {remote}: {message}")]
    Push { remote: String, message: String },
}

/// How the fetched log joined ours.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Joined {
    /// The remote held nothing we lacked.
    #[default]
    UpToDate,
    /// We held no log: ours is now the remote's.
    Adopted,
    /// Ours moved forward to the remote's tip.
    FastForward,
    /// A merge commit joins the two.
    Merged,
}

/// What merging a fetched tip did.
#[derive(Debug, Default)]
pub struct TipMerge {
    pub joined: Joined,
    /// Lines the remote held that ours did not (now in ours).
    pub added: usize,
    /// What the remote held that is not carried: lines that are not valid
    /// operations of their segment, other copies of ids ours holds,
    /// entries that are not segments, segments over the limit (named; the
    /// first of a segment, the rest counted).
    pub unreadable: Vec<super::Problem>,
    /// Of those, operations dated more than ten minutes past this machine's
    /// clock: held back (not folded, not the newest id) until their time.
    pub ahead: Vec<OpId>,
    /// Whether an added operation sorts before one ours held: a fold of
    /// ours (the checkpoint) cannot be advanced by it.
    pub older: bool,
}

impl Store {
    /// The ref a remote's log is fetched into: `refs/kapi/remotes/<name>/ops`
    /// for a remote name, a digest of the URL for a URL or path.
    pub fn tracking_ref(remote: &str) -> Result<String, RemoteError> {
        if remote.is_empty() || remote.starts_with('-') {
            return Err(RemoteError::BadRemote(remote.to_owned()));
        }
        // A remote name that makes a valid ref name (as git's own
        // check-ref-format judges it) names its tracking ref; a URL or a
        // path does not, and is named by its digest.
        let named = format!("refs/kapi/remotes/{remote}/ops");
        let name = match gix::refs::FullName::try_from(named.as_str()) {
            Ok(_) if !remote.contains(':') => named,
            _ => {
                let digest = crate::digest::sha256_hex(remote.as_bytes());
                format!("refs/kapi/remotes/url-{}/ops", &digest[..16])
            }
        };
        Ok(name)
    }

    /// Fetch `remote`'s `refs/kapi/ops` into its tracking ref; `None` when
    /// the remote has no log yet.
    pub fn fetch_log(
        &self,
        remote: &str,
        timeout: std::time::Duration,
    ) -> Result<Option<ObjectId>, RemoteError> {
        let tracking = Self::tracking_ref(remote)?;
        let refspec = format!("+{}:{tracking}", LogRef::Shared.name());
        match self.repo.fetch(remote, &refspec, timeout) {
            Ok(()) => {}
            Err(GitError::Command { message, .. })
                if message.contains("couldn't find remote ref") =>
            {
                return Ok(None);
            }
            Err(e) => {
                return Err(RemoteError::Fetch {
                    remote: remote.to_owned(),
                    message: match e {
                        GitError::Command { message, .. } => message,
                        other => other.to_string(),
                    },
                });
            }
        }
        let id = self
            .repo
            .gix()
            .try_find_reference(tracking.as_str())
            .ok()
            .flatten()
            .and_then(|mut r| r.peel_to_id().ok())
            .map(|id| id.detach());
        Ok(id)
    }

    /// Push our `refs/kapi/ops` to `remote`, fast-forward only.
    pub fn push_log(
        &self,
        remote: &str,
        timeout: std::time::Duration,
    ) -> Result<Pushed, RemoteError> {
        let refspec = format!("{0}:{0}", LogRef::Shared.name());
        self.repo
            .push(remote, &refspec, timeout)
            .map_err(|e| RemoteError::Push {
                remote: remote.to_owned(),
                message: match e {
                    GitError::Command { message, .. } => message,
                    other => other.to_string(),
                },
            })
    }

    /// The merge base of two commits (a common ancestor neither side can
    /// forge: it is reachable from both), if they have one.
    fn merge_base(&self, a: ObjectId, b: ObjectId) -> Result<Option<ObjectId>, StoreError> {
        if a == b {
            return Ok(Some(a));
        }
        let base = self
            .repo
            .gix()
            .merge_base(a, b)
            .map_err(git("finding the merge base of two logs"))?;
        Ok(base.map(|b| b.detach()))
    }

    fn commit_seconds(&self, commit: ObjectId) -> Result<i64, StoreError> {
        Ok(self
            .repo
            .gix()
            .find_commit(commit)
            .map_err(git("reading a log's commit"))?
            .time()
            .map_err(git("reading a log's commit"))?
            .seconds)
    }

    /// Merge the log at commit `theirs` (fetched from elsewhere) into
    /// `refs/kapi/ops` by union, under the commit lock. Lines of theirs
    /// are untrusted: only what a reader can use is carried, and the rest
    /// is named, never merged ([`intake`](super::intake)). With `project`,
    /// a log whose new operations all name other projects is refused
    /// ([`StoreError::OtherProject`]) before anything moves.
    ///
    /// Whenever theirs is not already in our history the result descends
    /// from it, so our next push is a fast-forward: a remote whose ref was
    /// rewritten, or that holds what we leave behind, takes the union back.
    pub fn merge_tip(
        &self,
        theirs: ObjectId,
        now_ms: u64,
        project: Option<&str>,
    ) -> Result<TipMerge, StoreError> {
        let _lock = lock::Lock::commit(&self.kapi_dir(), self.lock_timeout)?;
        let their_commit = self
            .repo
            .gix()
            .find_object(theirs)
            .map_err(git("reading the fetched log"))?
            .peel_to_kind(gix::object::Kind::Commit)
            .map_err(git("reading the fetched log"))?
            .id;
        let their_tree = self.tree_of(their_commit)?;
        for _ in 0..8 {
            let state = self.ref_state(LogRef::Shared)?;
            let ours = state.as_ref().and_then(|s| s.commit);
            let base = match ours {
                Some(o) => self.merge_base(o, their_commit)?,
                None => None,
            };
            // Theirs is in our history: nothing to take.
            if ours.is_some() && base == Some(their_commit) {
                return Ok(TipMerge::default());
            }
            let our_tree = ours.map(|o| self.tree_of(o)).transpose()?;
            let base_tree = base.map(|b| self.tree_of(b)).transpose()?;
            // What the union writes (hundreds of segments, the trees above
            // them, the merge commit) is kept in memory and written as one
            // pack before the ref moves ([`pack`]).
            let mut batch = self.repo.gix().clone().with_object_memory();
            let intake = intake::take_in(&batch, our_tree, their_tree, base_tree, now_ms)?;
            if let Some(project) = project
                && !intake.projects.is_empty()
                && !intake.projects.contains(project)
            {
                return Err(StoreError::OtherProject {
                    ours: project.to_owned(),
                    theirs: intake.projects.into_iter().collect(),
                });
            }
            let union = intake.tree.expect("an intake has a tree");
            let (joined, new_tip) = match ours {
                None if union == their_tree => (Joined::Adopted, their_commit),
                // What theirs holds that no reader can use stays behind.
                None => {
                    let seconds = self.commit_seconds(their_commit)?;
                    let commit =
                        write_commit(&batch, union, vec![their_commit], seconds, MERGE_MESSAGE)?;
                    (Joined::Adopted, commit)
                }
                Some(o) if union == their_tree && base == Some(o) => {
                    (Joined::FastForward, their_commit)
                }
                Some(o) => {
                    let mut parents = [o, their_commit];
                    parents.sort();
                    let seconds = self
                        .commit_seconds(o)?
                        .max(self.commit_seconds(their_commit)?);
                    let commit =
                        write_commit(&batch, union, parents.to_vec(), seconds, MERGE_MESSAGE)?;
                    (Joined::Merged, commit)
                }
            };
            if let Some(objects) = batch.objects.take_object_memory() {
                pack::write(self.repo.gix(), objects)?;
            }
            match self.move_ref(LogRef::Shared, state.as_ref(), new_tip)? {
                Moved::Done => {
                    self.forget_project();
                    return Ok(TipMerge {
                        joined,
                        added: intake.added,
                        unreadable: intake.refused,
                        ahead: intake.ahead,
                        older: intake.older,
                    });
                }
                Moved::Raced(_) => continue,
            }
        }
        Err(StoreError::Contended(
            LogRef::Shared.name(),
            8,
            "merging a fetched log".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::Store;

    #[test]
    fn a_remote_name_names_its_tracking_ref_and_a_url_or_path_its_digest() {
        let named = |r: &str| Store::tracking_ref(r).unwrap();
        assert_eq!(named("origin"), "refs/kapi/remotes/origin/ops");
        assert_eq!(
            named("team/upstream"),
            "refs/kapi/remotes/team/upstream/ops"
        );
        for url in [
            "/tmp/remote.git",
            "../remote.git",
            "git@example.com:team/docs.git",
            "https://example.com/team/docs.git",
            "bad..name",
            "x.lock",
        ] {
            let r = named(url);
            assert!(r.starts_with("refs/kapi/remotes/url-"), "{url}: {r}");
            assert!(gix::refs::FullName::try_from(r.as_str()).is_ok());
        }
        assert!(Store::tracking_ref("--upload-pack=x").is_err());
        assert!(Store::tracking_ref("").is_err());
    }
}
