//! One fill connection: `CLIENT REPLY OFF`, then SET/MSET commands encoded straight into large
//! write buffers (the server answers nothing, so nothing is read), then `CLIENT REPLY ON`,
//! whose `+OK` proves every earlier command was executed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use redline::{Config, RawConnector};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::keys::{write_key, TagTable};
use super::plan::{Master, Share};
use super::FillError;

const REPLY_OFF: &[u8] = b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$3\r\nOFF\r\n";
const REPLY_ON: &[u8] = b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$2\r\nON\r\n";

/// What every connection needs to know.
pub(crate) struct Job {
    pub(crate) cfg: Config,
    pub(crate) masters: Vec<Master>,
    pub(crate) tags: Option<TagTable>,
    pub(crate) key_size: usize,
    pub(crate) value_size: usize,
    pub(crate) pipeline: usize,
    /// Keys per command: 1 sends SET, more send MSET.
    pub(crate) per_command: usize,
    /// Keys written so far, for progress.
    pub(crate) written: AtomicU64,
}

/// Writes the keys of `share`.
pub(crate) async fn fill(job: Arc<Job>, share: Share) -> Result<(), FillError> {
    let master = &job.masters[share.master];
    let mut cfg = job.cfg.clone();
    cfg.host = master.host.clone();
    cfg.port = master.port;
    let addr = cfg.addr();
    let fail = |source: redline::Error| FillError::Connect {
        addr: addr.clone(),
        source,
    };
    let connector = RawConnector::new(&cfg).map_err(fail)?;
    let mut conn = connector.connect().await.map_err(fail)?;
    let io = |source: std::io::Error| FillError::Io {
        addr: addr.clone(),
        source,
    };

    // Each command is SET (one key) or MSET of `per_command` keys; in cluster mode all
    // keys of one command share a slot (one tag), as MSET requires.
    let key_head = format!("${}\r\n", job.key_size);
    let value_head = format!("\r\n${}\r\n", job.value_size);
    let per_key = key_head.len() + job.key_size + value_head.len() + job.value_size + 2;
    let per_command = job.per_command.max(1) as u64;
    let mut value = vec![0u8; job.value_size];
    let mut rng = fastrand::Rng::new();
    let mut buf: Vec<u8> = Vec::with_capacity(per_key * job.pipeline + 64 + REPLY_OFF.len());
    buf.extend_from_slice(REPLY_OFF);
    let mut prefix = b"k".to_vec();
    let mut index = share.start;
    while index < share.end {
        let batch_end = share.end.min(index + job.pipeline as u64);
        // A fresh random value per batch: random data without paying for random bytes
        // per key.
        value.iter_mut().for_each(|b| *b = rng.alphanumeric() as u8);
        let mut first = index;
        while first < batch_end {
            let last = batch_end.min(first + per_command);
            if last - first == 1 {
                buf.extend_from_slice(b"*3\r\n$3\r\nSET\r\n");
            } else {
                buf.extend_from_slice(
                    format!("*{}\r\n$4\r\nMSET\r\n", 1 + 2 * (last - first)).as_bytes(),
                );
            }
            if let Some(tags) = &job.tags {
                let nth = ((first - share.master_start) / per_command) as usize
                    % master.slots.len().max(1);
                let slot = master.slots.get(nth).copied().unwrap_or(0);
                prefix.clear();
                prefix.push(b'{');
                prefix.extend_from_slice(tags.tag(slot));
                prefix.push(b'}');
            }
            for i in first..last {
                buf.extend_from_slice(key_head.as_bytes());
                write_key(&mut buf, &prefix, i, job.key_size);
                buf.extend_from_slice(value_head.as_bytes());
                buf.extend_from_slice(&value);
                buf.extend_from_slice(b"\r\n");
            }
            first = last;
        }
        conn.write_all(&buf).await.map_err(io)?;
        buf.clear();
        job.written.fetch_add(batch_end - index, Ordering::Relaxed);
        index = batch_end;
    }
    conn.write_all(REPLY_ON).await.map_err(io)?;
    conn.flush().await.map_err(io)?;
    // Nothing was answered while replies were off, so the first reply is REPLY ON's.
    let mut reply = Vec::new();
    let mut chunk = [0u8; 512];
    while !reply.ends_with(b"\r\n") {
        let n = conn.read(&mut chunk).await.map_err(io)?;
        if n == 0 {
            return Err(FillError::Closed { addr });
        }
        reply.extend_from_slice(&chunk[..n]);
    }
    if reply != b"+OK\r\n" {
        return Err(FillError::Refused {
            addr,
            reply: String::from_utf8_lossy(&reply).trim().to_owned(),
        });
    }
    Ok(())
}
