//! A TCP or TLS byte stream behind one type, so the multiplexer is not generic.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::BytesMut;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// The socket a connection talks over.
pub(crate) enum Stream {
    /// Plain TCP.
    Tcp(TcpStream),
    /// TLS over TCP (boxed: the TLS state is large and the enum moves around).
    Tls(Box<TlsStream<TcpStream>>),
}

impl Stream {
    /// Whether [`Self::read_now`] can read: plain TCP only.
    pub(crate) fn reads_now(&self) -> bool {
        matches!(self, Stream::Tcp(_))
    }

    /// Reads what the socket holds right now into `buf`'s spare capacity, asking the
    /// kernel rather than tokio's readiness flag (which only the I/O driver updates):
    /// `WouldBlock` when nothing is there, and always over TLS, whose records must go
    /// through its session (see [`Self::reads_now`]). The flag is left alone, so tokio's
    /// next read still clears it only on a real `WouldBlock` and no wake-up is lost.
    pub(crate) fn read_now(&self, buf: &mut BytesMut) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => {
                let n = socket2::SockRef::from(s).recv(buf.spare_capacity_mut())?;
                // SAFETY: `recv` initialised the first `n` bytes of the spare capacity
                // (socket2's contract). A safe read would need the spare capacity zeroed
                // first, on every spin (the driver's hot wait, bench/NOTES.md).
                #[allow(unsafe_code)]
                unsafe {
                    buf.set_len(buf.len() + n)
                };
                Ok(n)
            }
            Stream::Tls(_) => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Tcp(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
