use super::*;
use std::path::Path;

/// docs/compatibility.md holds what the tables say. `UPDATE_COMPAT=1`
/// rewrites its generated sections.
#[test]
fn compatibility_doc_is_generated_from_the_tables() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/compatibility.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let want = regenerate(&doc);
    if std::env::var_os("UPDATE_COMPAT").is_some() {
        std::fs::write(&path, &want).unwrap();
        return;
    }
    assert!(
        doc == want,
        "docs/compatibility.md is stale: run `UPDATE_COMPAT=1 cargo test -p muster compat_doc`"
    );
}

#[test]
fn regenerate_keeps_prose_and_replaces_sections() {
    let once = regenerate("# Title\n\nProse.\n");
    assert!(once.starts_with(
        "# Title\n\nProse.\n\n## sbatch options\n\n<!-- generated: sbatch options -->\n"
    ));
    assert_eq!(regenerate(&once), once);
    let stale = once.replace("| `--tmp` | refused", "| `--tmp` | implemented (stale)");
    assert_ne!(stale, once);
    assert_eq!(regenerate(&stale), once);
}
