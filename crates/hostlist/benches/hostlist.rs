//! Hostlist expression cost: `expand`, `compress`, `count`.
//!
//! `cargo bench -p hostlist --bench hostlist`

fn main() {
    divan::main();
}

/// Node counts: a rack, a row, a large cluster.
const SIZES: &[usize] = &[16, 1024, 16384];

fn expr(n: usize) -> String {
    format!("node[{:05}-{:05}]", 1, n)
}

fn names(n: usize) -> Vec<String> {
    // Every third node missing, so the result has many ranges.
    (1..=n + n / 2)
        .filter(|i| i % 3 != 0)
        .take(n)
        .map(|i| format!("node{i:05}"))
        .collect()
}

#[divan::bench(args = SIZES)]
fn expand_range(bencher: divan::Bencher, n: usize) {
    let e = expr(n);
    bencher
        .counter(divan::counter::ItemsCount::new(n))
        .bench(|| hostlist::expand(divan::black_box(&e)).unwrap());
}

#[divan::bench(args = SIZES)]
fn count_range(bencher: divan::Bencher, n: usize) {
    let e = expr(n);
    bencher.bench(|| hostlist::count(divan::black_box(&e)).unwrap());
}

#[divan::bench(args = SIZES)]
fn compress_names(bencher: divan::Bencher, n: usize) {
    let v = names(n);
    bencher
        .counter(divan::counter::ItemsCount::new(n))
        .bench(|| hostlist::compress(divan::black_box(&v)));
}

/// A realistic multi-part expression: several racks and odd nodes.
#[divan::bench]
fn expand_mixed(bencher: divan::Bencher) {
    let e = "rack[1-8]-n[001-032],gpu[01-16],login[1,3-4],bigmem01";
    bencher.bench(|| hostlist::expand(divan::black_box(e)).unwrap());
}

#[divan::bench(args = SIZES)]
fn roundtrip(bencher: divan::Bencher, n: usize) {
    let v = names(n);
    bencher.bench(|| {
        let c = hostlist::compress(divan::black_box(&v));
        hostlist::expand(&c).unwrap()
    });
}
