//! The benchmark vocabulary every layer shares: the reference scenario's key ([`CLEAN`]) and the
//! ImageNet-C corruption names, families and severities. It sits on the ground floor so that sources
//! (which read the released corruption folders), scenarios, metrics and reports name the same things
//! without importing each other.

/// The key of the reference scenario: the unmodified frame.
pub const CLEAN: &str = "clean";

/// All 19 ImageNet-C corruptions in index order (docs/imagenet-c.md#corruption-order-and-groups):
/// the first [`BENCHMARK_COUNT`] are the benchmark corruptions (mCE), the rest the validation ones.
/// One-line description each.
pub const CORRUPTIONS: &[(&str, &str)] = &[
    (
        "gaussian_noise",
        "additive Gaussian noise per pixel and channel (docs/imagenet-c.md#gaussian_noise)",
    ),
    (
        "shot_noise",
        "Poisson photon noise per pixel and channel (docs/imagenet-c.md#shot_noise)",
    ),
    (
        "impulse_noise",
        "salt-and-pepper noise, each channel flipped independently \
         (docs/imagenet-c.md#impulse_noise)",
    ),
    (
        "defocus_blur",
        "anti-aliased disk kernel, reflect-101 border (docs/imagenet-c.md#defocus_blur)",
    ),
    (
        "glass_blur",
        "blur, local pixel copies, blur again (docs/imagenet-c.md#glass_blur)",
    ),
    (
        "motion_blur",
        "one-sided half-Gaussian streak at a random angle (docs/imagenet-c.md#motion_blur)",
    ),
    (
        "zoom_blur",
        "average of centrally zoomed copies (docs/imagenet-c.md#zoom_blur)",
    ),
    (
        "snow",
        "motion-blurred snow layer over a darkened, greyed image (docs/imagenet-c.md#snow)",
    ),
    (
        "frost",
        "frost texture blended over the image (docs/imagenet-c.md#frost)",
    ),
    (
        "fog",
        "plasma-fractal fog, contrast reduced (docs/imagenet-c.md#fog)",
    ),
    (
        "brightness",
        "HSV value raised (docs/imagenet-c.md#brightness)",
    ),
    (
        "contrast",
        "every channel pulled towards its mean (docs/imagenet-c.md#contrast)",
    ),
    (
        "elastic_transform",
        "smooth random displacement field, imagecorruptions variant \
         (docs/imagenet-c.md#elastic_transform)",
    ),
    (
        "pixelate",
        "box-downsampled and box-upsampled back, Pillow-exact (docs/imagenet-c.md#pixelate)",
    ),
    (
        "jpeg_compression",
        "JPEG round trip at low quality, libjpeg-turbo-exact (docs/imagenet-c.md#jpeg_compression)",
    ),
    (
        "speckle_noise",
        "multiplicative Gaussian noise per pixel and channel (docs/imagenet-c.md#speckle_noise)",
    ),
    (
        "gaussian_blur",
        "separable Gaussian blur, edge replication (docs/imagenet-c.md#gaussian_blur)",
    ),
    (
        "spatter",
        "water highlights or mud blobs from a random liquid layer (docs/imagenet-c.md#spatter)",
    ),
    (
        "saturate",
        "HSV saturation scaled and offset (docs/imagenet-c.md#saturate)",
    ),
];

/// How many of [`CORRUPTIONS`] (the first ones) make the ImageNet-C benchmark and its mCE.
pub const BENCHMARK_COUNT: usize = 15;

/// The imagecorruptions families (docs/imagenet-c.md#corruption-order-and-groups): name and the
/// indices into [`CORRUPTIONS`].
pub const FAMILIES: &[(&str, std::ops::Range<usize>)] = &[
    ("noise", 0..3),
    ("blur", 3..7),
    ("weather", 7..11),
    ("digital", 11..15),
    ("validation", 15..19),
];

/// Severity levels of every corruption.
pub const SEVERITIES: std::ops::RangeInclusive<u8> = 1..=5;
