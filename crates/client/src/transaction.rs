//! Optimistic transactions as one call: WATCH, read, queue writes, MULTI/EXEC, and run it
//! all again when a watched key changed in between.
//!
//! The building blocks stay public ([`Client::dedicated`], [`DedicatedConnection::watch`],
//! [`Pipeline::atomic`]); [`Client::transaction`] is the loop users would otherwise write
//! by hand, with the retry bounded so a hot key cannot spin a caller forever.

use std::future::Future;
use std::pin::Pin;

use redline_resp::Frame;

use crate::client::Client;
use crate::cmd::{cmd, ToArg};
use crate::dedicated::DedicatedConnection;
use crate::error::Error;
use crate::pipeline::Pipeline;
use crate::reply::FromReply;

/// How many times [`Client::transaction`] runs its body before giving up with
/// [`Error::TransactionAborted`].
///
/// ```
/// assert!(redline::TRANSACTION_ATTEMPTS > 1);
/// ```
pub const TRANSACTION_ATTEMPTS: usize = 32;

/// The future a transaction body returns: boxed, because it borrows the connection and
/// the pipeline it is handed.
///
/// ```
/// use redline::{DedicatedConnection, Pipeline, TransactionBody};
///
/// // A named body: reads nothing, queues one write.
/// fn bump<'c>(_conn: &'c mut DedicatedConnection, tx: &'c mut Pipeline) -> TransactionBody<'c> {
///     tx.incr("version");
///     Box::pin(async { Ok(()) })
/// }
/// # async fn demo(client: redline::Client) -> redline::Result<()> {
/// let (version,): (i64,) = client.transaction(["version"], bump).await?;
/// # let _ = version;
/// # Ok(()) }
/// ```
pub type TransactionBody<'c> = Pin<Box<dyn Future<Output = Result<(), Error>> + Send + 'c>>;

impl Client {
    /// Runs an optimistic transaction on a dedicated connection.
    ///
    /// Each attempt: `WATCH keys`, then `body(conn, tx)`, which may read through `conn`
    /// (the values it reads are the watched ones) and queues the writes on `tx`; then `tx`
    /// is sent as `MULTI ... EXEC`. If a watched key changed meanwhile, EXEC returns nil
    /// and the attempt starts over, up to [`TRANSACTION_ATTEMPTS`] times (then
    /// [`Error::TransactionAborted`]). The result is EXEC's replies converted to `T`
    /// (a tuple with one element per queued command, or a `Vec`).
    ///
    /// A body that queues nothing ends the transaction without MULTI (its keys are
    /// unwatched) and `T` is converted from an empty array: use `()` or a `Vec`. A body
    /// that returns `Err` ends it too, and that error is returned.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// use redline::Cmd;
    ///
    /// // Move one unit of stock to "sold", unless someone else moved it first.
    /// let ((), sold): ((), i64) = client
    ///     .transaction(["stock", "sold"], |conn, tx| {
    ///         Box::pin(async move {
    ///             let stock: i64 = conn.query(Cmd::new("GET").arg("stock")).await?;
    ///             tx.set("stock", stock - 1).incr("sold");
    ///             Ok(())
    ///         })
    ///     })
    ///     .await?;
    /// println!("{sold} sold");
    /// # Ok(()) }
    /// ```
    pub async fn transaction<K, T, F>(&self, keys: K, mut body: F) -> Result<T, Error>
    where
        K: IntoIterator + Clone,
        K::Item: ToArg,
        T: FromReply,
        F: for<'c> FnMut(&'c mut DedicatedConnection, &'c mut Pipeline) -> TransactionBody<'c>,
    {
        let mut conn = self.dedicated().await?;
        for _ in 0..TRANSACTION_ATTEMPTS {
            conn.watch(keys.clone()).await?;
            let mut tx = self.pipeline();
            if let Err(e) = body(&mut conn, &mut tx).await {
                // Best effort: a connection left watching is not reused anyway.
                let _ = conn.query::<()>(cmd!("UNWATCH")).await;
                return Err(e);
            }
            if tx.is_empty() {
                conn.query::<()>(cmd!("UNWATCH")).await?;
                return T::from_reply(Frame::Array(Vec::new()));
            }
            tx.atomic();
            match conn.run::<T>(&mut tx).await {
                Err(Error::TransactionAborted) => continue,
                other => return other,
            }
        }
        Err(Error::TransactionAborted)
    }
}
