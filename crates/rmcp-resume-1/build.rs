//! Tells the shared glue sources which upstream line they are compiled for.
//!
//! Both overlays (and both patch faces) compile `crates/rmcp-resume/src`; the
//! few places where rmcp 1.x and 3.x differ read `cfg(rmcp_line_1)`.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(rmcp_line_1)");
    println!("cargo::rustc-check-cfg=cfg(rmcp_line_2)");
    println!("cargo::rustc-check-cfg=cfg(rmcp_line_0_17)");
    println!("cargo::rustc-check-cfg=cfg(rmcp_line_0_16)");
    println!("cargo::rustc-check-cfg=cfg(rmcp_line_0_15)");
    println!("cargo::rustc-cfg=rmcp_line_1");
}
