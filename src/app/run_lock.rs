//! The run directory's lock: one run writes a run directory at a time. Two runs with the
//! same `--out` would otherwise both succeed and interleave their records.
//!
//! The lock is an OS advisory lock (`flock(2)`, through [`std::fs::File::try_lock`]) on
//! `<out>/.lock`, held for the whole run. The kernel releases it when the process ends, however it
//! ends (a crash, `kill -9`, a second Ctrl-C), so a dead run never leaves a stale lock. The file
//! holds the PID of the run that took it last, to name the holder in the message; it is left in
//! place at the end (removing it would let two runs lock two different files of the same name).

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The lock file's name inside the run directory.
const LOCK_FILE: &str = ".lock";

/// Why a run directory cannot be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the lock: another run is writing the directory.
    #[error("{}: another robustream run{} is writing this run directory", dir.display(), pid_text(*pid))]
    Busy {
        /// The run directory.
        dir: PathBuf,
        /// The holder's PID, as it wrote it into the lock file (`None` if not yet written).
        pid: Option<u32>,
    },
    /// The directory or its lock file cannot be created or opened.
    #[error("{}: cannot create the run directory or its lock file ({source})", dir.display())]
    Create {
        /// The run directory.
        dir: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The file system does not support locks (some network file systems): the run can go on, but
    /// another run writing the same directory would not be noticed.
    #[error("{}: cannot lock {LOCK_FILE} ({source})", dir.display())]
    Unsupported {
        /// The run directory.
        dir: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
}

/// " (PID n)" or "".
fn pid_text(pid: Option<u32>) -> String {
    pid.map(|p| format!(" (PID {p})")).unwrap_or_default()
}

/// The held lock of a run directory; released when dropped or when the process ends.
#[derive(Debug)]
pub(crate) struct RunLock {
    _file: File,
}

impl RunLock {
    /// Creates `dir` (and its parents) if needed and takes its lock without waiting: fails with
    /// [`LockError::Busy`] (naming the holder's PID when known) while another process holds it.
    /// Writes this process's PID into the lock file.
    pub(crate) fn acquire(dir: &Path) -> Result<Self, LockError> {
        let create = |source| LockError::Create {
            dir: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(create)?;
        // Not truncated on open: the holder's PID must stay readable to a run that finds it busy.
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(LOCK_FILE))
            .map_err(create)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let pid = file
                    .read_to_string(&mut text)
                    .ok()
                    .and_then(|_| text.trim().parse().ok());
                return Err(LockError::Busy {
                    dir: dir.to_path_buf(),
                    pid,
                });
            }
            Err(TryLockError::Error(source)) => {
                return Err(LockError::Unsupported {
                    dir: dir.to_path_buf(),
                    source,
                });
            }
        }
        // The PID is a courtesy for the message of a run that finds the directory busy: a failure
        // to write it does not matter.
        let _ = file
            .set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| writeln!(file, "{}", std::process::id()))
            .and_then(|()| file.flush());
        Ok(Self { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_directory_is_busy_until_its_lock_is_dropped() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("runs/a");
        let held = RunLock::acquire(&dir).unwrap();
        assert!(dir.join(LOCK_FILE).is_file());
        // flock locks belong to an open file: a second open in this process is refused too.
        match RunLock::acquire(&dir) {
            Err(LockError::Busy { dir: busy, pid }) => {
                assert_eq!(busy, dir);
                assert_eq!(pid, Some(std::process::id()));
            }
            other => panic!("not busy: {other:?}"),
        }
        let e = RunLock::acquire(&dir).unwrap_err().to_string();
        assert!(
            e.contains("another robustream run (PID ") && e.contains("runs/a"),
            "{e}"
        );
        // Another directory is free.
        let _other = RunLock::acquire(&d.path().join("runs/b")).unwrap();
        drop(held);
        // Released, and the file left behind is no stale lock.
        let _again = RunLock::acquire(&dir).unwrap();
    }

    #[test]
    fn an_unwritable_place_is_a_create_error() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let e = RunLock::acquire(&file.join("run")).unwrap_err();
        assert!(matches!(e, LockError::Create { .. }), "{e:?}");
    }
}
