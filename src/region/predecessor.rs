//! Which process ran on this data directory before this one. A region
//! move's lease names the process running it (its bus id, random per
//! process). A node restarted after a crash finds the leases its previous
//! process held and resumes those moves at once, instead of waiting for the
//! leases to expire as another node must.
//!
//! The previous process is known to be gone only while this one holds the
//! directory's lock (`node.lock`): two live processes never share a data
//! directory. A process that cannot take the lock (another holds it, as two
//! test nodes in one process do) claims no predecessor. A copy of the
//! directory on another machine names the process that ran there, not a
//! lease a live node holds: each process writes its own id.
use std::{
    fs::{File, TryLockError},
    io,
    path::Path,
};

use uuid::Uuid;

/// This process's claim on its data directory.
pub struct Predecessor {
    /// The process that ran here before, and is gone.
    pub id: Option<Uuid>,
    /// Held while this process runs.
    _lock: Option<File>,
}

impl Predecessor {
    /// Takes the directory's lock, reads the previous process's id and
    /// writes this one's (`current`).
    pub fn claim(data_dir: &Path, current: Uuid) -> Predecessor {
        match claim(data_dir, current) {
            Ok(Some((id, lock))) => Predecessor { id, _lock: Some(lock) },
            Ok(None) => {
                tracing::info!(
                    "another node holds this data directory: this one's region moves resume when their leases expire"
                );
                Predecessor { id: None, _lock: None }
            }
            Err(err) => {
                tracing::warn!(error = %err, "the data directory's node record is unusable: region moves resume when their leases expire");
                Predecessor { id: None, _lock: None }
            }
        }
    }
}

fn claim(data_dir: &Path, current: Uuid) -> io::Result<Option<(Option<Uuid>, File)>> {
    std::fs::create_dir_all(data_dir)?;
    let lock = File::options().create(true).truncate(false).write(true).open(data_dir.join("node.lock"))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Ok(None),
        Err(TryLockError::Error(err)) => return Err(err),
    }
    let record = data_dir.join("node.last");
    let previous = match std::fs::read_to_string(&record) {
        Ok(text) => Uuid::parse_str(text.trim()).ok(),
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => return Err(err),
    };
    let written = data_dir.join("node.last.new");
    std::fs::write(&written, current.to_string())?;
    std::fs::rename(&written, &record)?;
    Ok(Some((previous, lock)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restart_names_the_process_before_it_and_a_second_live_one_names_none() {
        let dir = tempfile::tempdir().unwrap();
        let (first, second, third) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let running = Predecessor::claim(dir.path(), first);
        assert_eq!(running.id, None, "the first process on a directory");
        assert_eq!(Predecessor::claim(dir.path(), second).id, None, "the directory is held: no predecessor");
        drop(running);
        let restarted = Predecessor::claim(dir.path(), third);
        assert_eq!(restarted.id, Some(first), "a live process's claim wrote nothing");
    }
}
