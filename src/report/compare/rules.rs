//! The `--fail-on` rules of `robustream compare` (docs/compare.md#rules): their grammar, the metric
//! names they may use, and how a parsed rule judges a value.
//!
//! ```text
//! RULES  = RULE *("," RULE)          (--fail-on may also be repeated)
//! RULE   = METRIC ["[" PATTERN "]"] OP NUMBER ["%"]
//! OP     = ">" / ">=" / "<" / "<="
//! NUMBER = ["+" / "-"] decimal        a fraction, as summary.json holds it; with "%", points
//! ```

use std::fmt;
use std::sync::LazyLock;

use crate::report::family::def;
pub(crate) use crate::report::family::{Better, MetricDef, Scope, Unit};

/// The per-scenario metrics a rule can name (from summary.json's `scenarios`).
const SCENARIO_METRICS: &[MetricDef] = &[
    def(
        "top1_drop",
        Scope::Scenario,
        Unit::Fraction,
        Better::Neither,
        "baseline top-1 − candidate top-1, per scenario",
    ),
    def(
        "top5_drop",
        Scope::Scenario,
        Unit::Fraction,
        Better::Neither,
        "baseline top-5 − candidate top-5, per scenario",
    ),
    def(
        "top1",
        Scope::Scenario,
        Unit::Fraction,
        Better::Neither,
        "candidate top-1 − baseline top-1, per scenario",
    ),
    def(
        "top5",
        Scope::Scenario,
        Unit::Fraction,
        Better::Neither,
        "candidate top-5 − baseline top-5, per scenario",
    ),
    def(
        "drop",
        Scope::Scenario,
        Unit::Fraction,
        Better::Neither,
        "change of the scenario's drop from clean, per scenario",
    ),
    def(
        "agreement",
        Scope::Scenario,
        Unit::Fraction,
        Better::Neither,
        "change of the agreement with clean, per scenario",
    ),
    def(
        "flip",
        Scope::Scenario,
        Unit::Fraction,
        Better::Neither,
        "change of the flip probability, per scenario",
    ),
    def(
        "flip_excess",
        Scope::Scenario,
        Unit::Fraction,
        Better::Neither,
        "change of the flip excess over clean, per scenario",
    ),
];

/// Every metric a rule can name, in the order the docs list them: the per-scenario ones, then
/// each metric family's ([`crate::report::family::Family::rules`], in `compare`'s order).
pub(crate) static METRICS: LazyLock<Vec<MetricDef>> = LazyLock::new(|| {
    SCENARIO_METRICS
        .iter()
        .chain(crate::report::families::rule_metrics())
        .copied()
        .collect()
});

/// The definition of the metric `name`.
pub(crate) fn metric(name: &str) -> Option<&'static MetricDef> {
    METRICS.iter().find(|m| m.name == name)
}

/// A comparison of a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
}

impl Op {
    /// The operator as written.
    fn as_str(self) -> &'static str {
        match self {
            Self::Gt => ">",
            Self::Ge => ">=",
            Self::Lt => "<",
            Self::Le => "<=",
        }
    }
}

/// One parsed `--fail-on` rule: it fires where the metric's value `op` the threshold holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// The rule as written (trimmed).
    pub(crate) text: String,
    /// The metric.
    pub(crate) metric: &'static MetricDef,
    /// The `[PATTERN]`, if any.
    pub(crate) pattern: Option<String>,
    /// The comparison.
    pub(crate) op: Op,
    /// The threshold as a fraction (a `%` threshold divided by 100).
    pub(crate) threshold: f64,
}

impl Rule {
    /// Whether `value` fires the rule.
    pub(crate) fn fires(&self, value: f64) -> bool {
        match self.op {
            Op::Gt => value > self.threshold,
            Op::Ge => value >= self.threshold,
            Op::Lt => value < self.threshold,
            Op::Le => value <= self.threshold,
        }
    }

    /// Whether the rule's pattern selects `key` (a scenario key or a family's key); no pattern
    /// selects every key.
    pub(crate) fn selects(&self, key: &str) -> bool {
        self.pattern.as_deref().is_none_or(|p| glob(p, key))
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A `--fail-on` rule that cannot be parsed: a usage error (exit 2).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuleError {
    /// The rule is not `METRIC[PATTERN] OP NUMBER`.
    #[error(
        "--fail-on rule `{}`: {why}; write METRIC[PATTERN]OP NUMBER, e.g. `top1_drop>0.02`, \
         `top1_drop[corruption/*]>=1%` or `mce>+0.01` (docs/compare.md#rules)",
        crate::quote::clip(rule)
    )]
    Syntax {
        /// The rule as written.
        rule: String,
        /// What is wrong with it.
        why: String,
    },
    /// The metric name is not one of [`METRICS`].
    #[error(
        "--fail-on rule `{}`: unknown metric `{}`{}; the metrics are {}",
        crate::quote::clip(rule),
        crate::quote::clip(name),
        suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default(),
        METRICS.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
    )]
    UnknownMetric {
        /// The rule as written.
        rule: String,
        /// The unknown name.
        name: String,
        /// A close known name, if any.
        suggestion: Option<String>,
    },
    /// A `[PATTERN]` on a metric that is one number per run.
    #[error(
        "--fail-on rule `{}`: `{metric}` is one number per run and takes no `[…]`; write it \
         without `[{}]`",
        crate::quote::clip(rule),
        crate::quote::clip(pattern)
    )]
    Pattern {
        /// The rule as written.
        rule: String,
        /// The metric.
        metric: &'static str,
        /// The pattern given.
        pattern: String,
    },
    /// A threshold of 1 or more without `%`: 100 points or more of a fraction, surely meant as
    /// points.
    #[error(
        "--fail-on rule `{}`: the threshold {number} is {} points, thresholds being fractions as \
         in summary.json; write `{head}{}` or `{head}{number}%`",
        crate::quote::clip(rule),
        number.parse::<f64>().map(|x| x * 100.0).unwrap_or(f64::NAN),
        number.parse::<f64>().map(|x| x / 100.0).unwrap_or(f64::NAN)
    )]
    Units {
        /// The rule as written.
        rule: String,
        /// The rule up to its number (`mce>`).
        head: String,
        /// The number as written.
        number: String,
    },
}

/// Parses the `--fail-on` values: each holds rules separated by commas (a comma inside `[…]`
/// belongs to the pattern); empty items are skipped.
pub fn parse_rules<'a>(values: impl IntoIterator<Item = &'a str>) -> Result<Vec<Rule>, RuleError> {
    let mut rules = Vec::new();
    for value in values {
        for item in split_top_level(value) {
            let item = item.trim();
            if !item.is_empty() {
                rules.push(parse_rule(item)?);
            }
        }
    }
    Ok(rules)
}

/// `text` split at the commas outside brackets.
fn split_top_level(text: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, ch) in text.char_indices() {
        match ch {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth <= 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

/// Parses one rule (see the module docs).
fn parse_rule(text: &str) -> Result<Rule, RuleError> {
    let syntax = |why: &str| RuleError::Syntax {
        rule: text.to_string(),
        why: why.to_string(),
    };
    // The operator: the first `<` or `>` outside the pattern.
    let mut depth = 0i32;
    let mut at = None;
    for (i, ch) in text.char_indices() {
        match ch {
            '[' => depth += 1,
            ']' => depth -= 1,
            '<' | '>' if depth == 0 => {
                at = Some(i);
                break;
            }
            _ => {}
        }
    }
    let Some(at) = at else {
        if depth > 0 {
            return Err(syntax("the pattern's `[` has no closing `]`"));
        }
        return Err(syntax("no comparison (`>`, `>=`, `<` or `<=`)"));
    };
    let (left, rest) = text.split_at(at);
    let (op, number) = match (rest.as_bytes()[0], rest.as_bytes().get(1)) {
        (b'>', Some(b'=')) => (Op::Ge, &rest[2..]),
        (b'<', Some(b'=')) => (Op::Le, &rest[2..]),
        (b'>', _) => (Op::Gt, &rest[1..]),
        _ => (Op::Lt, &rest[1..]),
    };
    let left = left.trim();
    let (name, pattern) = match left.split_once('[') {
        None => (left, None),
        Some((name, p)) => match p.strip_suffix(']') {
            Some(p) if !p.trim().is_empty() && !p.contains(['[', ']']) => {
                (name.trim(), Some(p.trim().to_string()))
            }
            Some(_) => return Err(syntax("an empty or nested `[…]` pattern")),
            None => {
                return Err(syntax(
                    "the pattern's `[` has no closing `]` before the comparison",
                ));
            }
        },
    };
    if name.is_empty() {
        return Err(syntax("no metric before the comparison"));
    }
    let Some(metric) = metric(name) else {
        return Err(RuleError::UnknownMetric {
            rule: text.to_string(),
            name: name.to_string(),
            suggestion: suggest(name),
        });
    };
    if let (Scope::None, Some(p)) = (metric.scope, &pattern) {
        return Err(RuleError::Pattern {
            rule: text.to_string(),
            metric: metric.name,
            pattern: p.clone(),
        });
    }
    let number = number.trim();
    let (digits, percent) = match number.strip_suffix('%') {
        Some(d) => (d.trim_end(), true),
        None => (number, false),
    };
    let valid = !digits.is_empty()
        && digits
            .trim_start_matches(['+', '-'])
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.')
        && digits.chars().filter(|c| matches!(c, '+' | '-')).count() <= 1;
    let value = match digits.parse::<f64>() {
        Ok(v) if valid && v.is_finite() => v,
        _ => {
            return Err(syntax(&format!(
                "`{}` after `{}` is not a number",
                crate::quote::clip(number),
                op.as_str()
            )));
        }
    };
    if !percent && value.abs() >= 1.0 {
        return Err(RuleError::Units {
            rule: text.to_string(),
            head: format!("{left}{}", op.as_str()),
            number: digits.to_string(),
        });
    }
    Ok(Rule {
        text: text.to_string(),
        metric,
        pattern,
        op,
        threshold: if percent { value / 100.0 } else { value },
    })
}

/// The metric name closest to `name` by edit distance, if reasonably close.
fn suggest(name: &str) -> Option<String> {
    METRICS
        .iter()
        .map(|m| (crate::quote::edit_distance(name, m.name), m.name))
        .filter(|(d, n)| *d <= 3.max(n.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n.to_string())
}

/// Whether `text` matches `pattern`, `*` in it matching any run of characters (`/` included).
pub(crate) fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}
