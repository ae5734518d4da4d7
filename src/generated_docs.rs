//! The documents generated from a list in code (the events, the error
//! codes, the configuration keys): each list's test compares its document
//! on disk with what the list generates, so a document cannot drift from
//! the code. With `GATEHOUSE_WRITE_DOCS=1` the tests write them instead.
use std::path::{Path, PathBuf};

/// Fails unless `relative` (from the repository's root) holds `generated`;
/// writes it first under `GATEHOUSE_WRITE_DOCS=1`.
pub fn assert_generated(relative: &str, generated: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    if std::env::var_os("GATEHOUSE_WRITE_DOCS").is_some() {
        std::fs::create_dir_all(path.parent().expect("a document has a folder")).expect("the docs folder is writable");
        std::fs::write(&path, generated).expect("the document is writable");
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "{relative} differs from what the code generates; run `GATEHOUSE_WRITE_DOCS=1 cargo test --lib` and commit it"
    );
}

/// Every file under `relative` (a folder from the repository's root), at
/// any depth: for the tests that read the repository's own files.
pub fn files_under(relative: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut folders = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(folder).expect("a folder of the repository") {
            let path = entry.expect("a readable folder entry").path();
            if path.is_dir() {
                folders.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}
