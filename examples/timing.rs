fn main() {
    let dir = std::env::args().nth(1).unwrap();
    let t = std::time::Instant::now();
    let store = kapi::store::Store::discover(std::path::Path::new(&dir)).unwrap();
    let t1 = t.elapsed();
    let loaded = store.load_all().unwrap();
    let t2 = t.elapsed();
    let n = loaded.records.len();
    let ledger = kapi::ops::fold(loaded.records);
    let t3 = t.elapsed();
    std::mem::forget(ledger);
    eprintln!("open {:?} load {:?} fold {:?} n={n}", t1, t2 - t1, t3 - t2);
}
