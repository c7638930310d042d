//! Live progress of a running test on stderr (a terminal only): requests per second in
//! the last quarter second and overall, errors, time left.

use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::runner::{Live, Plan};
use super::workload::Test;

/// Live progress on stderr while a test runs (only on a terminal, never with --json):
/// the bar and the task that refreshes it; clear it with [`Progress::finish`].
pub(crate) struct Progress(Option<(ProgressBar, tokio::task::JoinHandle<()>)>);

impl Progress {
    /// Stops refreshing and clears the line.
    pub(crate) fn finish(self) {
        if let Some((bar, ticker)) = self.0 {
            ticker.abort();
            bar.finish_and_clear();
        }
    }
}

/// Starts the display when `wanted` and stderr is a terminal.
pub(crate) fn start(wanted: bool, test: &Test, plan: &Plan, live: Arc<Live>) -> Progress {
    if !wanted || !std::io::stderr().is_terminal() {
        return Progress(None);
    }
    let title = if plan.pipeline > 1 {
        format!("{} (P={})", test.title, plan.pipeline)
    } else {
        test.title.clone()
    };
    let duration = plan.duration;
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    let ticking = bar.clone();
    let ticker = tokio::spawn(async move {
        let start = std::time::Instant::now();
        let mut last = 0u64;
        let mut interval = tokio::time::interval(Duration::from_millis(250));
        loop {
            interval.tick().await;
            let done = live.done.load(Ordering::Relaxed);
            let errors = live.errors.load(Ordering::Relaxed);
            let rps = done.saturating_sub(last) as f64 * 4.0;
            last = done;
            let overall = done as f64 / start.elapsed().as_secs_f64().max(1e-9);
            let left = match duration {
                Some(d) => format!(
                    " {:.0}s left",
                    d.saturating_sub(start.elapsed()).as_secs_f64()
                ),
                None => String::new(),
            };
            ticking.set_message(format!(
                "{title}: rps={rps:.0} (overall: {overall:.0}) done={done} errors={errors}{left}"
            ));
            ticking.tick();
        }
    });
    Progress(Some((bar, ticker)))
}
