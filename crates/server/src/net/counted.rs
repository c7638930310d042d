//! A stream that counts the bytes it reads and writes (INFO `total_net_input_bytes`,
//! `total_net_output_bytes`) and the calls that moved them (`total_reads_processed`,
//! `total_writes_processed`): additions per read or write call, moved to the server's
//! totals with the connection's other counters once per batch.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// `S`, counting its traffic.
#[derive(Debug)]
pub struct Counted<S> {
    inner: S,
    traffic: Traffic,
}

/// What went through a stream: bytes, and the read and write calls that completed (a
/// read that found the peer closed counts, as Redis counts each read it makes).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Traffic {
    /// Bytes read.
    pub read: u64,
    /// Bytes written.
    pub written: u64,
    /// Read calls that returned data or end of stream.
    pub reads: u64,
    /// Write calls that wrote something.
    pub writes: u64,
}

impl<S> Counted<S> {
    /// Wraps `inner` with every count at zero.
    pub fn new(inner: S) -> Self {
        Counted {
            inner,
            traffic: Traffic::default(),
        }
    }

    /// A duplicate of the socket's descriptor when it is a plain TCP socket (it shares
    /// the socket's non-blocking mode), for writes from another task
    /// ([`crate::repl::direct`]); `None` for TLS, Unix sockets, or when `dup` fails.
    pub fn duplicate_tcp(&self) -> Option<std::net::TcpStream>
    where
        S: 'static,
    {
        use std::os::fd::AsFd;
        let tcp = (&self.inner as &dyn std::any::Any).downcast_ref::<tokio::net::TcpStream>()?;
        let fd = tcp.as_fd().try_clone_to_owned().ok()?;
        Some(std::net::TcpStream::from(fd))
    }

    /// The traffic since the last call; the counts restart at zero.
    pub fn take_counts(&mut self) -> Traffic {
        std::mem::take(&mut self.traffic)
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            self.traffic.read += (buf.filled().len() - before) as u64;
            self.traffic.reads += 1;
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, data);
        if let Poll::Ready(Ok(n)) = polled {
            self.traffic.written += n as u64;
            self.traffic.writes += u64::from(n > 0);
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, data);
        if let Poll::Ready(Ok(n)) = polled {
            self.traffic.written += n as u64;
            self.traffic.writes += u64::from(n > 0);
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn counts_what_goes_through_both_ways() {
        let (a, mut b) = tokio::io::duplex(64);
        let mut counted = Counted::new(a);
        counted.write_all(b"hello").await.unwrap();
        b.write_all(b"abc").await.unwrap();
        let mut buf = [0u8; 8];
        let n = counted.read(&mut buf).await.unwrap();
        assert_eq!(n, 3);
        let traffic = Traffic {
            read: 3,
            written: 5,
            reads: 1,
            writes: 1,
        };
        assert_eq!(counted.take_counts(), traffic);
        assert_eq!(counted.take_counts(), Traffic::default());
    }
}
