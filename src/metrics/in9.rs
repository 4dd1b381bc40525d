//! IN-9 / Backgrounds Challenge metrics (REFERENCE §6): accuracy per variation, BG-gap and the
//! adversarial-background challenge accuracy.

use serde::{Deserialize, Serialize};

/// The outcome of the adversarial-background challenge (REFERENCE §6.6): each kept foreground was
/// composited onto backgrounds until one prediction was wrong (then it is *vulnerable*) or every
/// background was tried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChallengeTally {
    /// Foregrounds evaluated (each with a mask and a truth).
    pub foregrounds: u64,
    /// Of those, foregrounds with at least one wrong prediction (after mapping to the dataset
    /// classes; an unmapped prediction is wrong).
    pub vulnerable: u64,
    /// Backgrounds in the challenge set (every class, the foreground's own included).
    pub backgrounds: u64,
    /// Composites actually evaluated (early stop makes this ≤ foregrounds × backgrounds).
    pub composites: u64,
    /// Whether every kept foreground was evaluated against every background it needed (false when
    /// the run was interrupted or a bound cut the challenge short).
    pub complete: bool,
}

impl ChallengeTally {
    /// Challenge accuracy = 1 − vulnerable / foregrounds, a fraction in [0, 1]; `None` without
    /// foregrounds (REFERENCE §6.6).
    pub fn accuracy(&self) -> Option<f64> {
        (self.foregrounds > 0).then(|| 1.0 - self.vulnerable as f64 / self.foregrounds as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_accuracy_is_one_minus_vulnerable_share() {
        let t = ChallengeTally {
            foregrounds: 8,
            vulnerable: 6,
            backgrounds: 20,
            composites: 70,
            complete: true,
        };
        assert_eq!(t.accuracy(), Some(0.25));
        assert_eq!(ChallengeTally::default().accuracy(), None);
    }
}
