//! What the scenarios do to a frame: the ImageNet-C corruptions against the reference
//! implementation and at any frame size, the IN-9 and XIMAGENET-12 background scenarios and the
//! stream's background pool, the object scenarios (Hard ImageNet ablations, RFS, Corner Cases
//! placements), through `robustream apply` / `preview` and in runs, and schedules that pick which
//! scenarios a frame gets.

mod apply_background;
mod background_pool;
mod background_scenarios;
mod hard_imagenet;
mod imagenet_c_fidelity;
mod imagenet_c_sizes;
mod object_scenarios;
mod schedule;
