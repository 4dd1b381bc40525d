//! The 1000 ImageNet-1k class ids (wnids) in class-index order, for the sources that label frames
//! by wnid folder: the ImageNet-C layout ([`super::imagenet_c`]) and folders named after wnids
//! ([`super::folder`]). Its own file so neither of the two imports the other.

use std::sync::OnceLock;

/// `configs/imagenet_wnids.txt`, embedded: the 1000 ImageNet-1k wnids in sorted order after `#`
/// comment lines (provenance in its header).
const WNIDS_TXT: &str = include_str!("../../configs/imagenet_wnids.txt");

/// The 1000 ImageNet-1k wnids in class-index order (sorted).
pub(crate) fn wnids() -> &'static [&'static str] {
    static WNIDS: OnceLock<Vec<&'static str>> = OnceLock::new();
    WNIDS.get_or_init(|| {
        WNIDS_TXT
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect()
    })
}

/// The ImageNet-1k class index of a wnid (`n01440764` → 0, tench), if it is one of the 1000.
pub(crate) fn wnid_index(wnid: &str) -> Option<usize> {
    wnids().binary_search(&wnid).ok()
}
