//! Tells the shared glue sources which upstream line they are compiled for.
//!
//! rmcp 0.17 has the module layout of 1.8 and, where the glue meets it, most
//! of its API, so the 0.17 line is built as the 1.x family
//! (`cfg(rmcp_line_1)`) and `cfg(rmcp_line_0_17)` marks the places inside
//! `src/line/` where 0.17 differs from 1.8.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(rmcp_line_1)");
    println!("cargo::rustc-check-cfg=cfg(rmcp_line_2)");
    println!("cargo::rustc-check-cfg=cfg(rmcp_line_0_17)");
    println!("cargo::rustc-check-cfg=cfg(rmcp_line_0_16)");
    println!("cargo::rustc-check-cfg=cfg(rmcp_line_0_15)");
    println!("cargo::rustc-cfg=rmcp_line_1");
    println!("cargo::rustc-cfg=rmcp_line_0_17");
}
