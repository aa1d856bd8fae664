//! What settling leaves to record: the establishments a folded ledger
//! supports that no binding `establish` names yet ([`due`]), each with
//! the content address two machines settling the same log agree on.
//! Settling itself runs inside the fold (`fold/settle.rs`: what settles a
//! suggestion, and the tests of both).

use super::fold::{Ledger, Status};
use super::id::OpId;

/// An establishment the log supports that no binding `establish` names
/// yet: the suggestion, the person signals it rests on, and its content
/// address (from the two), so two machines settling the same log record
/// one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    pub target: OpId,
    pub because: Vec<OpId>,
    pub address: String,
}

/// The content address of an establishment: its target and its evidence.
pub fn establish_address(target: &OpId, because: &[OpId]) -> String {
    let mut text = format!("establish\n{}\n", target.as_str());
    let mut ids: Vec<&str> = because.iter().map(OpId::as_str).collect();
    ids.sort_unstable();
    for id in ids {
        text.push_str(id);
        text.push('\n');
    }
    format!("sha256:{}", crate::digest::sha256_hex(text.as_bytes()))
}

/// What settling would record over a folded ledger.
pub fn due(ledger: &Ledger) -> Vec<Due> {
    ledger
        .iter()
        .filter_map(|(record, state)| {
            let state = state?;
            let settled = state.status == Status::Established
                && !state.because.is_empty()
                && state.decided_by.is_none();
            settled.then(|| Due {
                target: record.op_id(),
                because: state.because.clone(),
                address: establish_address(&record.op_id(), &state.because),
            })
        })
        .collect()
}
