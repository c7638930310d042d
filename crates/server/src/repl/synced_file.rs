//! A full sync's image written to disk as it arrives, as Redis's replica writes it with
//! `repl-diskless-load disabled` (the default): a temporary file
//! `temp-<unix time>.<pid>.rdb` in `dir`, sent to disk as it grows, fsynced once whole,
//! then renamed over the dump file, which the replica loads.
//!
//! Why not keep the image in memory and write it beside the load: the replica's peak
//! was then its old dataset plus the whole image while the image arrived, where
//! Redis's is the old dataset alone; and a write that failed (a full disk) left the
//! synced data without its file. Written as it arrives, a failed write fails the sync
//! before the old dataset is touched, and the link tries again, as Redis's does.
//!
//! The link's task hands what it reads to a blocking thread ([`SyncedFile::write`]),
//! so the socket keeps being read while the disk writes; the channel between them is
//! bounded, so a slow disk slows the transfer, not the replica's memory.

use std::io::{self, Write};
use std::path::PathBuf;

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

use crate::persist::data_file::DataFile;

/// Pieces of the image in flight between the link and the writer (each up to about
/// [`PIECE`] bytes).
const IN_FLIGHT: usize = 16;

/// The link hands the image to the writer in pieces of about this size.
pub const PIECE: usize = 256 * 1024;

enum Piece {
    Bytes(Bytes),
    /// The image is whole: sync the file and keep it.
    End,
}

/// The temporary file a full sync's image is being written to. Dropped before
/// [`SyncedFile::finish`] (the sync failed), the file goes.
///
/// ```no_run
/// # async fn example() -> std::io::Result<()> {
/// use redline_server::repl::synced_file::SyncedFile;
/// let mut file = SyncedFile::create()?;
/// file.write(bytes::Bytes::from_static(b"REDIS0010")).await?;
/// let path = file.finish().await?; // fsynced, ready to be renamed over the dump file
/// # let _ = path;
/// # Ok(())
/// # }
/// ```
pub struct SyncedFile {
    path: PathBuf,
    pieces: mpsc::Sender<Piece>,
    written: oneshot::Receiver<io::Result<()>>,
}

impl SyncedFile {
    /// Creates the temporary file in the working directory (`dir`) and starts its
    /// writer.
    pub fn create() -> io::Result<SyncedFile> {
        let path = PathBuf::from(format!(
            "temp-{}.{}.rdb",
            crate::persist::snapshot::unix_secs(),
            std::process::id()
        ));
        let file = std::fs::File::create(&path).map_err(|e| {
            failed(
                e,
                "Opening the temp file needed for MASTER <-> REPLICA synchronization",
            )
        })?;
        let (pieces, arrivals) = mpsc::channel(IN_FLIGHT);
        let (done, written) = oneshot::channel();
        let writer_path = path.clone();
        tokio::task::spawn_blocking(move || {
            let result = write_pieces(DataFile::new(file).synced_as_written(true), arrivals);
            // A link that went while the file was synced does not want it either.
            if !matches!(result, Ok(true)) || done.is_closed() {
                let _ = std::fs::remove_file(&writer_path);
            }
            let _ = done.send(result.map(|_| ()));
        });
        Ok(SyncedFile {
            path,
            pieces,
            written,
        })
    }

    /// Appends `bytes` to the image; fails once a write to the file failed.
    pub async fn write(&mut self, bytes: Bytes) -> io::Result<()> {
        if self.pieces.send(Piece::Bytes(bytes)).await.is_ok() {
            return Ok(());
        }
        // The writer stopped: its error says why.
        Err(self.writer_error().await)
    }

    /// Ends the image: the file is on disk when this returns its path.
    pub async fn finish(mut self) -> io::Result<PathBuf> {
        if self.pieces.send(Piece::End).await.is_err() {
            return Err(self.writer_error().await);
        }
        match (&mut self.written).await {
            Ok(Ok(())) => Ok(self.path),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(writer_gone()),
        }
    }

    async fn writer_error(&mut self) -> io::Error {
        match (&mut self.written).await {
            Ok(Err(e)) => e,
            _ => writer_gone(),
        }
    }
}

/// `e` after Redis's words for what failed.
fn failed(e: io::Error, what: &str) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

fn writer_gone() -> io::Error {
    io::Error::other("the writer of the MASTER <-> REPLICA synchronization file stopped")
}

/// Writes the pieces as they come; `Ok(true)` once the image ended and the file is
/// synced, `Ok(false)` when the link dropped the image first.
fn write_pieces(mut file: DataFile, mut arrivals: mpsc::Receiver<Piece>) -> io::Result<bool> {
    while let Some(piece) = arrivals.blocking_recv() {
        match piece {
            Piece::Bytes(bytes) => file.write_all(&bytes).map_err(|e| {
                failed(e, "Write error or short write writing to the DB dump file needed for MASTER <-> REPLICA synchronization")
            })?,
            Piece::End => {
                file.file().sync_all().map_err(|e| {
                    failed(e, "Failed trying to sync the temp DB to disk in MASTER <-> REPLICA synchronization")
                })?;
                return Ok(true);
            }
        }
    }
    Ok(false)
}
