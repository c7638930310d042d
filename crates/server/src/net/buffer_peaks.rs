//! The largest query and output buffers any client held lately: INFO's
//! `client_recent_max_input_buffer` and `client_recent_max_output_buffer`.
//!
//! As Redis's client cron does, each client is looked at about once a second and its
//! buffers recorded in that second's slot; INFO reports the largest of the last
//! [`SLOTS`] seconds, so a burst stays visible for a few seconds after it is over.

/// Seconds remembered (Redis's `CLIENTS_PEAK_MEM_USAGE_SLOTS`).
pub const SLOTS: usize = 8;

/// One second's largest buffers.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// The second (since the Unix epoch) the slot holds.
    second: u64,
    input: usize,
    output: usize,
}

/// The largest buffers seen in each of the last [`SLOTS`] seconds.
#[derive(Debug, Default)]
pub struct BufferPeaks {
    slots: [Slot; SLOTS],
}

impl BufferPeaks {
    /// Records one client's query buffer (`input`: its allocation and the arguments
    /// split off it) and output waiting (`output`), seen during `second`.
    pub fn record(&mut self, second: u64, input: usize, output: usize) {
        let slot = &mut self.slots[(second % SLOTS as u64) as usize];
        if slot.second != second {
            *slot = Slot {
                second,
                input: 0,
                output: 0,
            };
        }
        slot.input = slot.input.max(input);
        slot.output = slot.output.max(output);
    }

    /// The largest input and output buffers recorded in the [`SLOTS`] seconds up to
    /// `second`.
    pub fn recent_max(&self, second: u64) -> (usize, usize) {
        self.slots
            .iter()
            .filter(|s| s.second <= second && second - s.second < SLOTS as u64)
            .fold((0, 0), |(i, o), s| (i.max(s.input), o.max(s.output)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_shown_for_the_slots_then_forgotten() {
        let mut peaks = BufferPeaks::default();
        peaks.record(100, 40_000, 0);
        peaks.record(100, 100, 2_000);
        peaks.record(101, 10, 10);
        assert_eq!(peaks.recent_max(101), (40_000, 2_000));
        assert_eq!(peaks.recent_max(107), (40_000, 2_000));
        assert_eq!(peaks.recent_max(108), (10, 10));
        // Second 108 reuses second 100's slot: the old figures go.
        peaks.record(108, 5, 5);
        assert_eq!(peaks.recent_max(108), (10, 10));
        assert_eq!(peaks.recent_max(109), (5, 5));
        assert_eq!(peaks.recent_max(200), (0, 0));
    }
}
