//! Tells the shared glue sources which upstream line they are compiled for.
//!
//! rmcp 0.15 has the module layout of 1.8 and lacks everything 0.16 lacks
//! where the glue meets it, so the 0.15 line is built as the 0.16 line
//! (`cfg(rmcp_line_1)`, `cfg(rmcp_line_0_17)` and `cfg(rmcp_line_0_16)`), and
//! `cfg(rmcp_line_0_15)` marks the few places inside `src/line/` where 0.15
//! lacks what 0.16 has.

fn main() {
    for line in ["1", "2", "0_17", "0_16", "0_15"] {
        println!("cargo::rustc-check-cfg=cfg(rmcp_line_{line})");
    }
    for line in ["1", "0_17", "0_16", "0_15"] {
        println!("cargo::rustc-cfg=rmcp_line_{line}");
    }
}
