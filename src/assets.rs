//! Where the set-up command's assets are: `scripts/assets.sh` caches the ONNX Runtime library, the
//! model, the photos and the frost textures in `${ROBUSTREAM_CACHE:-$HOME/.cache/robustream}` and
//! links that folder into the checkout as `assets/`. A binary run in the checkout, from
//! `target/<profile>/`, or installed anywhere (`cargo install --path .`) finds them through
//! [`dirs`], in that order, so it works from any directory.

use std::path::PathBuf;

/// The environment variable that moves the cache, as `scripts/assets.sh` reads it.
const CACHE_ENV: &str = "ROBUSTREAM_CACHE";

/// The asset folders, in the order they are tried: `assets/` under the working directory,
/// `assets/` of the repository a `target/<profile>/robustream` (or `…/deps/…` test) binary was
/// built in, and the cache itself (`$ROBUSTREAM_CACHE`, else `$HOME/.cache/robustream`).
pub fn dirs() -> Vec<PathBuf> {
    let exe_repo = std::env::current_exe().ok().and_then(|e| {
        let mut p = e.parent()?;
        if p.ends_with("deps") {
            p = p.parent()?;
        }
        Some(p.parent()?.parent()?.join("assets"))
    });
    let cache = match std::env::var_os(CACHE_ENV).filter(|c| !c.is_empty()) {
        Some(c) => Some(PathBuf::from(c)),
        None => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/robustream")),
    };
    [Some(PathBuf::from("assets")), exe_repo, cache]
        .into_iter()
        .flatten()
        .collect()
}

/// `relative` under each of [`dirs`], in order (e.g. `lib/libonnxruntime.so`, `frost`).
pub(crate) fn candidates(relative: &str) -> Vec<PathBuf> {
    dirs().into_iter().map(|d| d.join(relative)).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_checkout_comes_before_the_cache() {
        let c = super::candidates("lib/x.so");
        assert_eq!(c[0], std::path::Path::new("assets/lib/x.so"));
        assert!(c.last().unwrap().ends_with("lib/x.so"));
        assert!(c.len() >= 2, "{c:?}");
    }
}
