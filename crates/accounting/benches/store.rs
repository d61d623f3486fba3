//! Accounting store benchmark (docs/performance-history.md, "Accounting store"):
//!
//! 1. record writes per second through `AccountingStore::put_jobs` (batches
//!    of 1000, the writer thread's path) against raw batched inserts of the
//!    same rows into the same table (prepared INSERT, JSON encoded
//!    beforehand, no upsert), on SQLite;
//! 2. sacct's commonest query, one user's jobs of one day, over a store of
//!    N jobs: p50 and p99 of 200 queries.
//!
//! `cargo bench -p accounting --bench store` (release build). Environment:
//! `ACCT_BENCH_JOBS` (default 1_000_000) jobs of `ACCT_BENCH_USERS` (100)
//! users spread over 100 days; `ACCT_BENCH_DIR` (default a temporary
//! directory) for the database files; `ACCT_BENCH_KEEP=1` keeps the loaded
//! query store there and reuses it when it already holds N jobs;
//! `ACCT_BENCH_COLD=1` measures each query with a cold cache: the system's
//! page cache is dropped once before the queries (root only), and before
//! each query the store is closed, the database's pages are evicted from
//! the page cache (`posix_fadvise(DONTNEED)`, this file only) and the store
//! is opened again (not timed), so every page a query reads comes from the
//! disk. The query
//! store is loaded in bulk mode ([`SqliteStore::set_bulk_load`]: 100,000
//! jobs a transaction, no fsync), which is set-up, not measurement.

use std::time::Instant;

use accounting::suite::sample_job;
use accounting::{AccountingStore, JobQuery, SqliteStore};
use proto::AcctJob;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

const DAY: i64 = 86_400;
const DAYS: i64 = 100;
const T0: i64 = 1_790_000_000;

/// Job `i` of `n`: users round-robin, submit times spread evenly.
fn job(i: u64, n: u64, users: u64) -> AcctJob {
    let submit = T0 + (i as i64) * (DAYS * DAY) / (n as i64);
    let mut j = sample_job("bench", (i + 1) as u32, submit);
    j.user = format!("user{:03}", i % users);
    j.account = format!("acct{:02}", (i % users) % 10);
    j
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn main() {
    let n = env("ACCT_BENCH_JOBS", 1_000_000);
    let users = env("ACCT_BENCH_USERS", 100);
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = std::env::var("ACCT_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir).expect("bench dir");
    const BATCH: u64 = 1000;

    // 1. Writes: 100k records each way (enough for a steady rate).
    let w = n.min(100_000);
    let path = dir.join("writes.db");
    let _ = std::fs::remove_file(&path);
    let mut store = SqliteStore::open(&path).expect("open");
    let t = Instant::now();
    let mut i = 0;
    while i < w {
        let batch: Vec<AcctJob> = (i..(i + BATCH).min(w)).map(|k| job(k, w, users)).collect();
        store.put_jobs(&batch).expect("put");
        i += BATCH;
    }
    let store_rate = w as f64 / t.elapsed().as_secs_f64();
    drop(store);

    let raw_path = dir.join("raw.db");
    let _ = std::fs::remove_file(&raw_path);
    drop(SqliteStore::open(&raw_path).expect("schema"));
    let mut conn = rusqlite::Connection::open(&raw_path).expect("raw open");
    conn.pragma_update(None, "journal_mode", "WAL")
        .expect("wal");
    conn.pragma_update(None, "synchronous", "FULL")
        .expect("sync");
    // Encoding is part of any writer's work; the raw side gets it for free.
    let rows: Vec<(AcctJob, String)> = (0..w)
        .map(|k| {
            let j = job(k, w, users);
            let rec = serde_json::to_string(&j).expect("json");
            (j, rec)
        })
        .collect();
    let t = Instant::now();
    for chunk in rows.chunks(BATCH as usize) {
        let tx = conn.transaction().expect("tx");
        {
            let mut st = tx
                .prepare_cached(
                    "INSERT INTO jobs (cluster, job_id, submit_time, user_name, account, state, \
                     partition_name, job_name, eligible_time, start_time, end_time, record) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                )
                .expect("prepare");
            for (j, rec) in chunk {
                st.execute(rusqlite::params![
                    j.cluster,
                    j.job_id.0,
                    j.submit_time,
                    j.user,
                    j.account,
                    j.state.as_slurm_str(),
                    j.partition,
                    j.name,
                    j.eligible_time,
                    j.start_time,
                    j.end_time,
                    rec
                ])
                .expect("insert");
            }
        }
        tx.commit().expect("commit");
    }
    let raw_rate = w as f64 / t.elapsed().as_secs_f64();
    drop(conn);
    println!("writes: {w} records in batches of {BATCH}");
    println!("  AccountingStore::put_jobs  {store_rate:>10.0} records/s");
    println!("  raw batched INSERT         {raw_rate:>10.0} records/s");
    println!(
        "  ratio                      {:>10.2}",
        store_rate / raw_rate
    );

    // 2. sacct over N stored jobs: one user, one day. Loading is set-up,
    // not measurement: bulk mode (no fsync, 100,000 jobs a transaction).
    // With ACCT_BENCH_KEEP=1 the loaded file is kept, and reused by the
    // next run when it holds N jobs.
    let keep = std::env::var("ACCT_BENCH_KEEP").is_ok_and(|v| v == "1");
    let path = dir.join("query.db");
    let reuse = keep
        && path.exists()
        && SqliteStore::open(&path)
            .and_then(|s| s.job_count())
            .is_ok_and(|c| c == n);
    if !reuse {
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(dir.join("query.db-wal"));
        let _ = std::fs::remove_file(dir.join("query.db-shm"));
    }
    let mut store = SqliteStore::open(&path).expect("open");
    let t = Instant::now();
    if reuse {
        println!("load: reusing {} ({n} jobs)", path.display());
    } else {
        const LOAD_BATCH: u64 = 100_000;
        store.set_bulk_load(true).expect("bulk on");
        let mut i = 0;
        while i < n {
            let batch: Vec<AcctJob> = (i..(i + LOAD_BATCH).min(n))
                .map(|k| job(k, n, users))
                .collect();
            store.put_jobs(&batch).expect("put");
            i += LOAD_BATCH;
            if i % 1_000_000 == 0 {
                eprintln!("  loaded {i} jobs, {:.0} s", t.elapsed().as_secs_f64());
            }
        }
        store.set_bulk_load(false).expect("bulk off");
        println!(
            "load: {n} jobs in {:.1} s ({:.0} jobs/s, bulk: {LOAD_BATCH} a transaction, \
             synchronous=OFF), {:.0} MB",
            t.elapsed().as_secs_f64(),
            n as f64 / t.elapsed().as_secs_f64(),
            std::fs::metadata(&path).map_or(0, |m| m.len()) as f64 / 1e6
        );
    }
    let cold = std::env::var("ACCT_BENCH_COLD").is_ok_and(|v| v == "1");
    if cold {
        drop(store);
        match std::fs::write("/proc/sys/vm/drop_caches", "3\n") {
            Ok(()) => println!("cold: page cache dropped, and the file evicted before each query"),
            Err(e) => {
                println!("cold: page cache not dropped ({e}); the file evicted before each query")
            }
        }
        store = SqliteStore::open(&path).expect("open");
    }
    let mut times = Vec::new();
    let mut found = 0;
    for q in 0..200u64 {
        if cold {
            drop(store);
            evict(&dir);
            store = SqliteStore::open(&path).expect("open");
        }
        let day = T0 + ((q * 37) % (DAYS as u64 - 1)) as i64 * DAY;
        let query = JobQuery {
            cluster: Some("bench".into()),
            users: vec![format!("user{:03}", (q * 13) % users)],
            start: Some(day),
            end: Some(day + DAY - 1),
            ..JobQuery::default()
        };
        let t = Instant::now();
        let jobs = store.query(&query).expect("query");
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        found += jobs.len();
    }
    times.sort_by(|a, b| a.total_cmp(b));
    println!(
        "sacct -u USER -S day -E day+1 over {n} jobs{}: p50 {:.2} ms, p99 {:.2} ms \
         ({:.0} jobs per answer)",
        if cold { ", cold cache" } else { "" },
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        found as f64 / 200.0
    );
    drop(store);
    if !keep {
        for f in [
            "query.db",
            "query.db-wal",
            "query.db-shm",
            "writes.db",
            "raw.db",
        ] {
            let _ = std::fs::remove_file(dir.join(f));
        }
    }
}

/// Evicts the query database's files from the page cache (clean pages
/// only: the store is closed, nothing is dirty).
fn evict(dir: &std::path::Path) {
    use std::os::fd::AsRawFd;
    for name in ["query.db", "query.db-wal", "query.db-shm"] {
        if let Ok(f) = std::fs::File::open(dir.join(name)) {
            // SAFETY: an open descriptor; posix_fadvise only advises the
            // kernel about its pages.
            unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
    }
}
