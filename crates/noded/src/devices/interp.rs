//! A userspace eBPF interpreter for the tests: runs a device filter program
//! on a `bpf_cgroup_dev_ctx` the way the kernel would, so the programs
//! `bpf::assemble` makes are checked without root and without a kernel.
//!
//! It knows the subset such programs need: 32- and 64-bit ALU operations
//! (add, sub, or, and, lsh, rsh, xor, mov) with an immediate or a
//! register, 64- and 32-bit conditional jumps (jeq, jne, jgt, jge, jlt,
//! jle, jset) and `goto`, loads from the context (1, 2, 4 or 8 bytes) and
//! exit. Like the verifier it refuses a read of a register never written,
//! a load from anything but the context or out of its bounds, arithmetic on
//! the context pointer, a jump out of the program and running off its end,
//! and (`check_reachable`) instructions no path reaches.

use super::bpf::*;
use super::DeviceKind;

/// What a register holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Value {
    /// Never written: reading it is an error.
    Uninit,
    /// The context pointer plus an offset.
    Ctx,
    /// A number.
    Scalar(u64),
}

/// The context the kernel passes: `access_type = access << 16 | type`.
pub fn ctx(kind: DeviceKind, major: u32, minor: u32, access: u32) -> [u8; CTX_SIZE] {
    let mut c = [0u8; CTX_SIZE];
    let access_type = (access << 16) | kind.bpf_type();
    c[0..4].copy_from_slice(&access_type.to_ne_bytes());
    c[4..8].copy_from_slice(&major.to_ne_bytes());
    c[8..12].copy_from_slice(&minor.to_ne_bytes());
    c
}

/// Runs `prog` on `ctx` and returns r0 at exit.
pub fn run(prog: &[Insn], ctx: &[u8]) -> Result<u64, String> {
    let mut regs = [Value::Uninit; 11];
    regs[1] = Value::Ctx;
    // The frame pointer; the programs here use no stack, but it is set.
    regs[10] = Value::Scalar(0);
    let mut pc = 0usize;
    // Programs without back edges run each instruction at most once.
    for _ in 0..=prog.len() {
        let insn = *prog
            .get(pc)
            .ok_or_else(|| format!("ran off the end of the program at {pc}"))?;
        let (dst, src) = (usize::from(insn.dst()), usize::from(insn.src()));
        if dst > 10 || src > 10 {
            return Err(format!("{pc}: bad register in {insn}"));
        }
        let scalar = move |regs: &[Value; 11], r: usize| -> Result<u64, String> {
            match regs[r] {
                Value::Scalar(v) => Ok(v),
                Value::Uninit => Err(format!("{pc}: r{r} read before it was written ({insn})")),
                Value::Ctx => Err(format!("{pc}: arithmetic on the context pointer ({insn})")),
            }
        };
        let class = insn.code & 0x07;
        let op = insn.code & 0xf0;
        let from_reg = insn.code & SRC_X != 0;
        match class {
            CLASS_LDX => {
                if insn.code & 0xe0 != MODE_MEM {
                    return Err(format!("{pc}: unsupported load mode ({insn})"));
                }
                if regs[src] != Value::Ctx {
                    return Err(format!("{pc}: load from r{src}, not the context ({insn})"));
                }
                let size = match insn.code & 0x18 {
                    SIZE_B => 1,
                    SIZE_H => 2,
                    SIZE_W => 4,
                    _ => 8,
                };
                let start = usize::try_from(insn.off)
                    .map_err(|_| format!("{pc}: negative context offset ({insn})"))?;
                let bytes = ctx
                    .get(start..start + size)
                    .ok_or_else(|| format!("{pc}: load beyond the context ({insn})"))?;
                let mut buf = [0u8; 8];
                if cfg!(target_endian = "little") {
                    buf[..size].copy_from_slice(bytes);
                } else {
                    buf[8 - size..].copy_from_slice(bytes);
                }
                regs[dst] = Value::Scalar(u64::from_ne_bytes(buf));
                pc += 1;
            }
            CLASS_ALU | CLASS_ALU64 => {
                let wide = class == CLASS_ALU64;
                // Copying the context pointer is the one thing done with it.
                if op == ALU_MOV && from_reg && wide && regs[src] == Value::Ctx {
                    regs[dst] = Value::Ctx;
                    pc += 1;
                    continue;
                }
                let operand = if from_reg {
                    scalar(&regs, src)?
                } else {
                    // The immediate is sign-extended to 64 bits.
                    insn.imm as i64 as u64
                };
                let result = if op == ALU_MOV {
                    operand
                } else {
                    let a = scalar(&regs, dst)?;
                    let (a, b) = if wide {
                        (a, operand)
                    } else {
                        (a & 0xffff_ffff, operand & 0xffff_ffff)
                    };
                    let shift_mask = if wide { 63 } else { 31 };
                    match op {
                        ALU_ADD => a.wrapping_add(b),
                        ALU_SUB => a.wrapping_sub(b),
                        ALU_OR => a | b,
                        ALU_AND => a & b,
                        ALU_XOR => a ^ b,
                        ALU_LSH => a << (b & shift_mask),
                        ALU_RSH => a >> (b & shift_mask),
                        _ => return Err(format!("{pc}: unsupported ALU operation ({insn})")),
                    }
                };
                // A 32-bit operation zeroes the upper half.
                let result = if wide { result } else { result & 0xffff_ffff };
                regs[dst] = Value::Scalar(result);
                pc += 1;
            }
            CLASS_JMP | CLASS_JMP32 => {
                if class == CLASS_JMP && op == JMP_EXIT {
                    return scalar(&regs, 0);
                }
                let taken = if class == CLASS_JMP && op == JMP_JA {
                    true
                } else {
                    let a = scalar(&regs, dst)?;
                    let b = if from_reg {
                        scalar(&regs, src)?
                    } else {
                        insn.imm as i64 as u64
                    };
                    let (a, b) = if class == CLASS_JMP32 {
                        (a & 0xffff_ffff, b & 0xffff_ffff)
                    } else {
                        (a, b)
                    };
                    match op {
                        JMP_JEQ => a == b,
                        JMP_JNE => a != b,
                        JMP_JGT => a > b,
                        JMP_JGE => a >= b,
                        JMP_JLT => a < b,
                        JMP_JLE => a <= b,
                        JMP_JSET => a & b != 0,
                        _ => return Err(format!("{pc}: unsupported jump ({insn})")),
                    }
                };
                pc = if taken {
                    jump_target(prog, pc, insn)?
                } else {
                    pc + 1
                };
            }
            _ => return Err(format!("{pc}: unsupported instruction ({insn})")),
        }
    }
    Err("the program loops".into())
}

/// Where a jump at `pc` goes; an error when it leaves the program or goes
/// backwards (the programs here have no loops).
fn jump_target(prog: &[Insn], pc: usize, insn: Insn) -> Result<usize, String> {
    let target = pc as i64 + 1 + i64::from(insn.off);
    if insn.off < 0 || target as usize >= prog.len() {
        return Err(format!(
            "{pc}: jump out of the program or backwards ({insn})"
        ));
    }
    Ok(target as usize)
}

/// Like the verifier: every instruction must be reachable from the first,
/// and no path may run off the end.
pub fn check_reachable(prog: &[Insn]) -> Result<(), String> {
    let mut seen = vec![false; prog.len()];
    let mut todo = vec![0usize];
    while let Some(pc) = todo.pop() {
        let Some(insn) = prog.get(pc) else {
            return Err(format!("a path runs off the end at {pc}"));
        };
        if std::mem::replace(&mut seen[pc], true) {
            continue;
        }
        let class = insn.code & 0x07;
        let op = insn.code & 0xf0;
        if class == CLASS_JMP && op == JMP_EXIT {
            continue;
        }
        if class == CLASS_JMP || class == CLASS_JMP32 {
            todo.push(jump_target(prog, pc, *insn)?);
            if class == CLASS_JMP && op == JMP_JA {
                continue;
            }
        }
        todo.push(pc + 1);
    }
    match seen.iter().position(|s| !s) {
        Some(pc) => Err(format!("instruction {pc} ({}) is unreachable", prog[pc])),
        None => Ok(()),
    }
}
