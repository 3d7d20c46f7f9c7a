//! Progress on a terminal: a spinner on standard error naming the phase that runs and the time
//! so far, with a line for each phase done. Shown only when standard error is a terminal and
//! the run lasts over a second; never on standard output, so never mixed into a report.

use clif_merge::pipeline::PhaseHook;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Runs shorter than this show nothing.
const DELAY: Duration = Duration::from_secs(1);

/// The progress of one run (nothing at all when standard error is not a terminal).
pub struct Progress {
    bar: Option<ProgressBar>,
    /// The phase that runs and when it started.
    current: Arc<Mutex<Option<(&'static str, Instant)>>>,
}

impl Progress {
    /// Starts watching; the spinner appears after [`DELAY`] if the run is still going.
    pub fn start() -> Progress {
        let current = Arc::new(Mutex::new(None));
        if !std::io::stderr().is_terminal() {
            return Progress { bar: None, current };
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        let style =
            ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("a valid template");
        bar.set_style(style);
        let shown = bar.clone();
        std::thread::spawn(move || {
            std::thread::sleep(DELAY);
            if !shown.is_finished() {
                shown.set_draw_target(ProgressDrawTarget::stderr());
                shown.enable_steady_tick(Duration::from_millis(120));
            }
        });
        Progress {
            bar: Some(bar),
            current,
        }
    }

    /// The hook that the pipeline calls at each phase.
    pub fn hook(&self) -> Option<PhaseHook> {
        let bar = self.bar.clone()?;
        let current = self.current.clone();
        Some(PhaseHook(Arc::new(move |phase| {
            let mut current = current.lock().expect("not poisoned");
            if let Some((done, since)) = current.take() {
                bar.println(format!("  {done}: {:.2?}", since.elapsed()));
            }
            bar.set_message(phase);
            *current = Some((phase, Instant::now()));
        })))
    }

    /// Removes the spinner (before anything else is written).
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
