//! Tells the shared glue sources which upstream line they are compiled for.
//!
//! rmcp 0.16 has the module layout of 1.8 and lacks everything 0.17 lacks
//! where the glue meets it, so the 0.16 line is built as the 0.17 line
//! (`cfg(rmcp_line_1)` and `cfg(rmcp_line_0_17)`), and `cfg(rmcp_line_0_16)`
//! marks the few places inside `src/line/` where 0.16 lacks what 0.17 has.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(rmcp_line_1)");
    println!("cargo::rustc-check-cfg=cfg(rmcp_line_2)");
    println!("cargo::rustc-check-cfg=cfg(rmcp_line_0_17)");
    println!("cargo::rustc-check-cfg=cfg(rmcp_line_0_16)");
    println!("cargo::rustc-check-cfg=cfg(rmcp_line_0_15)");
    println!("cargo::rustc-cfg=rmcp_line_1");
    println!("cargo::rustc-cfg=rmcp_line_0_17");
    println!("cargo::rustc-cfg=rmcp_line_0_16");
}
