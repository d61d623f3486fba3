use std::fs;

use journal::Record;
use proptest::prelude::*;

use crate::util::*;

fn groups() -> impl Strategy<Value = Vec<Vec<Vec<u8>>>> {
    prop::collection::vec(
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..48), 1..6),
        1..8,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever point a crash cuts the newest segment at, recovery returns exactly the
    /// records that were wholly written before it, and appends go on from there.
    #[test]
    fn a_cut_log_recovers_a_prefix(groups in groups(), snapshot_after in any::<prop::sample::Index>(), cut in any::<prop::sample::Index>(), take_snapshot in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let (mut j, _) = open(dir.path());
        let snapshot_after = take_snapshot.then(|| snapshot_after.index(groups.len()));
        let mut written: Vec<Record> = Vec::new();
        let mut snap_seq = 0;
        for (g, group) in groups.iter().enumerate() {
            let refs: Vec<&[u8]> = group.iter().map(Vec::as_slice).collect();
            let last = j.append(&refs).unwrap();
            let first = last + 1 - group.len() as u64;
            written.extend(group.iter().enumerate().map(|(i, p)| Record { seq: first + i as u64, payload: p.clone() }));
            if snapshot_after == Some(g) {
                j.snapshot(last, b"state").unwrap();
                snap_seq = last;
            }
        }
        drop(j);

        // The snapshot started a new segment at snap_seq + 1; cut that one.
        let last_segment = log_path(dir.path(), snap_seq + 1);
        let in_last: Vec<Vec<u8>> = written[snap_seq as usize..].iter().map(|r| r.payload.clone()).collect();
        let ends = offsets(&in_last);
        let len = fs::metadata(&last_segment).unwrap().len();
        prop_assert_eq!(len, *ends.last().unwrap());
        let cut = HEADER_LEN + cut.index((len - HEADER_LEN + 1) as usize) as u64;
        fs::OpenOptions::new().write(true).open(&last_segment).unwrap().set_len(cut).unwrap();

        let kept = ends[1..].iter().take_while(|&&end| end <= cut).count();
        let want: Vec<Record> = written[snap_seq as usize..snap_seq as usize + kept].to_vec();
        let (mut j, rec) = open(dir.path());
        prop_assert_eq!(rec.snapshot.map(|s| s.seq), take_snapshot.then_some(snap_seq));
        prop_assert_eq!(&rec.records, &want);
        let good_end = ends[kept];
        prop_assert_eq!(rec.truncated.map(|t| (t.offset, t.dropped_bytes)), (cut > good_end).then_some((good_end, cut - good_end)));

        let next = snap_seq + kept as u64 + 1;
        prop_assert_eq!(j.append(&[b"after"]).unwrap(), next);
        drop(j);
        let (_, rec) = open(dir.path());
        let mut want = want;
        want.push(Record { seq: next, payload: b"after".to_vec() });
        prop_assert_eq!(rec.records, want);
        prop_assert_eq!(rec.truncated, None);
    }
}
