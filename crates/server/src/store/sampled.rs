//! MEMORY USAGE's estimate of a large collection from a few of its elements (its
//! SAMPLES option), as Redis makes it: a walk over every element would make the
//! command, and `redis-cli --memkeys` with it, cost each collection's size.

/// How many elements MEMORY USAGE looks at when not told (Redis's
/// `OBJ_COMPUTE_SIZE_DEF_SAMPLES`).
pub const DEFAULT_SAMPLES: usize = 5;

/// The total of `sizes`, one per element of a collection of `len`, estimated from the
/// first `samples` of them (every one when `samples` is 0 or covers them all).
pub fn sampled_sum(sizes: impl Iterator<Item = usize>, len: usize, samples: usize) -> usize {
    if samples == 0 || samples >= len {
        return sizes.sum();
    }
    let (sum, seen) = sizes
        .take(samples)
        .fold((0usize, 0usize), |(sum, seen), size| {
            (sum.saturating_add(size), seen + 1)
        });
    if seen == 0 {
        return 0;
    }
    sum / seen * len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_few_elements_stand_for_all_of_them_unless_told_to_look_at_every_one() {
        let sizes = || [10usize, 20, 30, 40, 1000].into_iter();
        assert_eq!(sampled_sum(sizes(), 5, 0), 1100);
        assert_eq!(sampled_sum(sizes(), 5, 5), 1100);
        assert_eq!(sampled_sum(sizes(), 5, 2), 75);
        assert_eq!(sampled_sum(sizes(), 1_000_000, 4), 25_000_000);
        assert_eq!(sampled_sum(std::iter::empty(), 10, 3), 0);
    }
}
