//! Tells the shared glue sources which upstream line they are compiled for.
//!
//! rmcp 2.2 keeps the API of 1.8 where the glue meets it (no event store, no
//! SEP-2260, no response limits, `stateful_mode`), so the 2.x line is built
//! as the 1.x family (`cfg(rmcp_line_1)`) and `cfg(rmcp_line_2)` marks the
//! few places inside `src/line/` where 2.2 differs from 1.8.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(rmcp_line_1)");
    println!("cargo::rustc-check-cfg=cfg(rmcp_line_2)");
    println!("cargo::rustc-check-cfg=cfg(rmcp_line_0_17)");
    println!("cargo::rustc-check-cfg=cfg(rmcp_line_0_16)");
    println!("cargo::rustc-check-cfg=cfg(rmcp_line_0_15)");
    println!("cargo::rustc-cfg=rmcp_line_1");
    println!("cargo::rustc-cfg=rmcp_line_2");
}
