//! A log segment (a shard blob on refs/kapi/ops) from untrusted bytes:
//! every bad line is named and skipped, the good ones fold.
#![no_main]
use kapi::store::segment;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (mut records, mut problems) = (Vec::new(), Vec::new());
    let shard = data.first().map(|b| (b % 32, b / 32));
    segment::parse(data, shard, "fuzz", &mut records, &mut problems);
    for p in &problems {
        let _ = p.error.to_string();
    }
    let _ = segment::newest_id(data, u64::MAX);
    let _ = segment::newest_id(data, 0);
    let mut lines: Vec<&[u8]> = segment::lines(data).collect();
    segment::normalize(&mut lines);
    let _ = segment::to_bytes(&lines);
    let _ = kapi::ops::fold::fold_with_history(records);
});
