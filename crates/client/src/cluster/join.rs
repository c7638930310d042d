//! Awaiting several futures at once, results in input order (sub-commands sent to
//! several nodes in parallel). A few lines here instead of a dependency on `futures`.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

/// Runs every future concurrently on the current task; returns their outputs in order.
pub(crate) async fn join_all<F: Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    let mut left = futures.len();
    std::future::poll_fn(|cx| {
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                if let Poll::Ready(value) = future.as_mut().poll(cx) {
                    *output = Some(value);
                    left -= 1;
                }
            }
        }
        if left == 0 {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keeps_input_order() {
        let futures = (0..5u64).map(|i| async move {
            tokio::time::sleep(std::time::Duration::from_millis(10 * (5 - i))).await;
            i
        });
        assert_eq!(join_all(futures).await, vec![0, 1, 2, 3, 4]);
    }
}
