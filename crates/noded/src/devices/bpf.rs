//! The cgroup v2 device filter as an eBPF program of type
//! `BPF_PROG_TYPE_CGROUP_DEVICE`, assembled here instruction by instruction
//! (no compiler, no libbpf).
//!
//! The kernel runs the program at every open and mknod of a device file by
//! a process of the cgroup, with a pointer to `struct bpf_cgroup_dev_ctx`
//! in r1:
//!
//! ```text
//!   offset 0  u32 access_type   low 16 bits: type (1 block, 2 char)
//!                               high 16 bits: access (1 mknod, 2 read, 4 write)
//!   offset 4  u32 major
//!   offset 8  u32 minor
//! ```
//!
//! and reads the verdict from r0 at exit: 1 allows, 0 denies (EPERM).
//!
//! The program, for a `Filter` with rules R1..Rn and a default:
//!
//! ```text
//!   prologue   r2 = type, r3 = access, r4 = major, r5 = minor   (each only if a rule looks at it)
//!   block Ri   if r2 != type   goto next block                   (each test only if Ri has it)
//!              w1 = w3; w1 &= ...; if r1 ... goto next block     (access, see below)
//!              if r4 != major  goto next block
//!              if r5 != minor  goto next block
//!              r0 = verdict of Ri; exit
//!   default    r0 = default; exit
//! ```
//!
//! An allow rule needs every access asked for (`access & !rule == 0`), a
//! deny rule one of them (`access & rule != 0`); a rule for all three
//! kinds tests nothing. A rule without any test matches everything: the
//! program ends with it, since the verifier refuses instructions that can
//! never run. Device numbers are compared as 64-bit registers with a
//! sign-extended 32-bit immediate, which every kernel with this program
//! type (4.15) understands; Linux's numbers have 12 (major) and 20 (minor)
//! bits, and `assemble` refuses any that would not compare right.

use super::{Access, DeviceError, Filter, Rule};
use std::fmt;

/// `BPF_DEVCG_DEV_BLOCK`.
pub const DEVCG_DEV_BLOCK: u32 = 1;
/// `BPF_DEVCG_DEV_CHAR`.
pub const DEVCG_DEV_CHAR: u32 = 2;

/// Offsets in `struct bpf_cgroup_dev_ctx`.
pub const CTX_ACCESS_TYPE: i16 = 0;
/// Offset of `major`.
pub const CTX_MAJOR: i16 = 4;
/// Offset of `minor`.
pub const CTX_MINOR: i16 = 8;
/// Size of the context.
pub const CTX_SIZE: usize = 12;

// Instruction classes (low 3 bits of the opcode).
pub const CLASS_LDX: u8 = 0x01;
pub const CLASS_ALU: u8 = 0x04;
pub const CLASS_JMP: u8 = 0x05;
pub const CLASS_JMP32: u8 = 0x06;
pub const CLASS_ALU64: u8 = 0x07;

// Source operand (bit 3): the immediate or a register.
pub const SRC_K: u8 = 0x00;
pub const SRC_X: u8 = 0x08;

// Memory loads: size (bits 3-4) and mode (bits 5-7).
pub const SIZE_W: u8 = 0x00;
pub const SIZE_H: u8 = 0x08;
pub const SIZE_B: u8 = 0x10;
pub const SIZE_DW: u8 = 0x18;
pub const MODE_MEM: u8 = 0x60;

// ALU operations (bits 4-7).
pub const ALU_ADD: u8 = 0x00;
pub const ALU_SUB: u8 = 0x10;
pub const ALU_OR: u8 = 0x40;
pub const ALU_AND: u8 = 0x50;
pub const ALU_LSH: u8 = 0x60;
pub const ALU_RSH: u8 = 0x70;
pub const ALU_XOR: u8 = 0xa0;
pub const ALU_MOV: u8 = 0xb0;

// Jump operations (bits 4-7).
pub const JMP_JA: u8 = 0x00;
pub const JMP_JEQ: u8 = 0x10;
pub const JMP_JGT: u8 = 0x20;
pub const JMP_JGE: u8 = 0x30;
pub const JMP_JSET: u8 = 0x40;
pub const JMP_JNE: u8 = 0x50;
pub const JMP_EXIT: u8 = 0x90;
pub const JMP_JLT: u8 = 0xa0;
pub const JMP_JLE: u8 = 0xb0;

// Registers the program uses.
const R0: u8 = 0;
const R1: u8 = 1;
const R_TYPE: u8 = 2;
const R_ACCESS: u8 = 3;
const R_MAJOR: u8 = 4;
const R_MINOR: u8 = 5;

/// One eBPF instruction, laid out as the kernel's `struct bpf_insn`
/// (8 bytes: opcode, two 4-bit registers, a 16-bit offset, a 32-bit
/// immediate), so a slice of them is what BPF_PROG_LOAD reads.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    /// The opcode: class, source or size, operation or mode.
    pub code: u8,
    /// The destination register in the low nibble of the byte on a
    /// little-endian machine (the bit field `dst_reg:4` comes first), the
    /// source register in the other.
    regs: u8,
    /// Jump offset (instructions after the next one) or memory offset.
    pub off: i16,
    /// Immediate operand.
    pub imm: i32,
}

impl Insn {
    /// An instruction from its fields.
    pub const fn new(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
        let regs = if cfg!(target_endian = "little") {
            (dst & 0x0f) | (src << 4)
        } else {
            (dst << 4) | (src & 0x0f)
        };
        Insn {
            code,
            regs,
            off,
            imm,
        }
    }

    /// The destination register.
    pub const fn dst(&self) -> u8 {
        if cfg!(target_endian = "little") {
            self.regs & 0x0f
        } else {
            self.regs >> 4
        }
    }

    /// The source register.
    pub const fn src(&self) -> u8 {
        if cfg!(target_endian = "little") {
            self.regs >> 4
        } else {
            self.regs & 0x0f
        }
    }

    /// `dst = *(u32 *)(src + off)`.
    pub const fn ldx_w(dst: u8, src: u8, off: i16) -> Insn {
        Insn::new(CLASS_LDX | MODE_MEM | SIZE_W, dst, src, off, 0)
    }

    /// A 32-bit ALU operation with an immediate: `wdst op= imm` (the upper
    /// half of the register becomes zero).
    pub const fn alu32_imm(op: u8, dst: u8, imm: i32) -> Insn {
        Insn::new(CLASS_ALU | SRC_K | op, dst, 0, 0, imm)
    }

    /// A 32-bit ALU operation with a register: `wdst op= wsrc`.
    pub const fn alu32_reg(op: u8, dst: u8, src: u8) -> Insn {
        Insn::new(CLASS_ALU | SRC_X | op, dst, src, 0, 0)
    }

    /// A 64-bit ALU operation with an immediate (sign-extended).
    pub const fn alu64_imm(op: u8, dst: u8, imm: i32) -> Insn {
        Insn::new(CLASS_ALU64 | SRC_K | op, dst, 0, 0, imm)
    }

    /// `if dst op imm goto +off` on 64-bit registers (imm sign-extended).
    pub const fn jmp_imm(op: u8, dst: u8, imm: i32, off: i16) -> Insn {
        Insn::new(CLASS_JMP | SRC_K | op, dst, 0, off, imm)
    }

    /// `exit`: return r0.
    pub const fn exit() -> Insn {
        Insn::new(CLASS_JMP | JMP_EXIT, 0, 0, 0, 0)
    }

    /// The 8 bytes the kernel reads.
    pub fn to_bytes(self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0] = self.code;
        b[1] = self.regs;
        b[2..4].copy_from_slice(&self.off.to_ne_bytes());
        b[4..8].copy_from_slice(&self.imm.to_ne_bytes());
        b
    }
}

impl fmt::Debug for Insn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl fmt::Display for Insn {
    /// The kernel verifier log's notation for what `assemble` emits;
    /// anything else as its raw fields.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (dst, src, off, imm) = (self.dst(), self.src(), self.off, self.imm);
        let alu_sym = |op: u8| match op {
            ALU_ADD => Some("+="),
            ALU_SUB => Some("-="),
            ALU_OR => Some("|="),
            ALU_AND => Some("&="),
            ALU_LSH => Some("<<="),
            ALU_RSH => Some(">>="),
            ALU_XOR => Some("^="),
            ALU_MOV => Some("="),
            _ => None,
        };
        let jmp_sym = |op: u8| match op {
            JMP_JEQ => Some("=="),
            JMP_JNE => Some("!="),
            JMP_JGT => Some(">"),
            JMP_JGE => Some(">="),
            JMP_JLT => Some("<"),
            JMP_JLE => Some("<="),
            JMP_JSET => Some("&"),
            _ => None,
        };
        let class = self.code & 0x07;
        let op = self.code & 0xf0;
        let is_x = self.code & SRC_X != 0;
        match class {
            CLASS_LDX if self.code == CLASS_LDX | MODE_MEM | SIZE_W => {
                write!(f, "r{dst} = *(u32 *)(r{src} {off:+})")
            }
            CLASS_ALU | CLASS_ALU64 if alu_sym(op).is_some() => {
                let r = if class == CLASS_ALU { 'w' } else { 'r' };
                let sym = alu_sym(op).unwrap_or("?");
                if is_x {
                    write!(f, "{r}{dst} {sym} {r}{src}")
                } else {
                    write!(f, "{r}{dst} {sym} {imm}")
                }
            }
            CLASS_JMP if op == JMP_EXIT => write!(f, "exit"),
            CLASS_JMP if op == JMP_JA => write!(f, "goto {off:+}"),
            CLASS_JMP | CLASS_JMP32 if jmp_sym(op).is_some() => {
                let r = if class == CLASS_JMP { 'r' } else { 'w' };
                let sym = jmp_sym(op).unwrap_or("?");
                if is_x {
                    write!(f, "if {r}{dst} {sym} {r}{src} goto {off:+}")
                } else {
                    write!(f, "if {r}{dst} {sym} {imm} goto {off:+}")
                }
            }
            _ => write!(
                f,
                "code={:#04x} dst=r{dst} src=r{src} off={off} imm={imm}",
                self.code
            ),
        }
    }
}

/// A device number as an immediate that compares right against the
/// zero-extended 32-bit value the program loaded (see the module doc).
fn number_imm(what: &str, value: u32) -> Result<i32, DeviceError> {
    i32::try_from(value).map_err(|_| DeviceError::Assemble {
        reason: format!("{what} number {value} is beyond what a device number can be"),
    })
}

/// The tests of one rule, before the jump offsets are known: each is
/// "skip to the next block unless ...".
enum Test {
    /// `if r != imm goto next`.
    Ne(u8, i32),
    /// `w1 = w3; w1 &= mask; if r1 != 0 goto next` (allow rules: no access
    /// outside the rule's).
    NoneOutside(i32),
    /// `w1 = w3; w1 &= mask; if r1 == 0 goto next` (deny rules: some
    /// access inside the rule's).
    SomeInside(i32),
}

impl Test {
    fn len(&self) -> usize {
        match self {
            Test::Ne(..) => 1,
            Test::NoneOutside(_) | Test::SomeInside(_) => 3,
        }
    }
}

/// The tests a rule needs (empty: it matches every request), or `None`
/// when it can match no request at all (an empty access set).
fn tests_of(rule: &Rule) -> Result<Option<Vec<Test>>, DeviceError> {
    let mut tests = Vec::new();
    if let Some(kind) = rule.kind {
        tests.push(Test::Ne(R_TYPE, kind.bpf_type() as i32));
    }
    if rule.access == Access::NONE {
        // The kernel always asks for at least one kind of access.
        return Ok(None);
    }
    if rule.access != Access::ALL {
        let bits = rule.access.bits() as i32;
        tests.push(if rule.allow {
            Test::NoneOutside(!bits & Access::ALL.bits() as i32)
        } else {
            Test::SomeInside(bits)
        });
    }
    if let Some(major) = rule.major {
        tests.push(Test::Ne(R_MAJOR, number_imm("major", major)?));
    }
    if let Some(minor) = rule.minor {
        tests.push(Test::Ne(R_MINOR, number_imm("minor", minor)?));
    }
    Ok(Some(tests))
}

/// The program for `filter` (see the module doc for its shape).
pub fn assemble(filter: &Filter) -> Result<Vec<Insn>, DeviceError> {
    let mut blocks = Vec::new();
    let mut catch_all = None;
    for rule in &filter.rules {
        let Some(tests) = tests_of(rule)? else {
            continue;
        };
        if tests.is_empty() {
            catch_all = Some(rule.allow);
            break;
        }
        blocks.push((tests, rule.allow));
    }
    let uses = |reg: u8| {
        blocks.iter().any(|(tests, _)| {
            tests.iter().any(|t| match t {
                Test::Ne(r, _) => *r == reg,
                Test::NoneOutside(_) | Test::SomeInside(_) => reg == R_ACCESS,
            })
        })
    };

    let mut prog = Vec::new();
    if uses(R_TYPE) {
        prog.push(Insn::ldx_w(R_TYPE, R1, CTX_ACCESS_TYPE));
        prog.push(Insn::alu32_imm(ALU_AND, R_TYPE, 0xffff));
    }
    if uses(R_ACCESS) {
        prog.push(Insn::ldx_w(R_ACCESS, R1, CTX_ACCESS_TYPE));
        prog.push(Insn::alu32_imm(ALU_RSH, R_ACCESS, 16));
    }
    if uses(R_MAJOR) {
        prog.push(Insn::ldx_w(R_MAJOR, R1, CTX_MAJOR));
    }
    if uses(R_MINOR) {
        prog.push(Insn::ldx_w(R_MINOR, R1, CTX_MINOR));
    }
    for (tests, allow) in &blocks {
        // The block's length: its tests, then `r0 = verdict; exit`.
        let block_len: usize = tests.iter().map(Test::len).sum::<usize>() + 2;
        let block_start = prog.len();
        let next_block = block_start + block_len;
        // The offset of a jump at `at` to the next block.
        let skip = |at: usize| -> Result<i16, DeviceError> {
            i16::try_from(next_block - at - 1).map_err(|_| DeviceError::Assemble {
                reason: "a rule is too long for a jump".into(),
            })
        };
        for test in tests {
            match *test {
                Test::Ne(reg, imm) => {
                    let off = skip(prog.len())?;
                    prog.push(Insn::jmp_imm(JMP_JNE, reg, imm, off));
                }
                Test::NoneOutside(mask) | Test::SomeInside(mask) => {
                    prog.push(Insn::alu32_reg(ALU_MOV, R1, R_ACCESS));
                    prog.push(Insn::alu32_imm(ALU_AND, R1, mask));
                    let off = skip(prog.len())?;
                    let op = if matches!(test, Test::NoneOutside(_)) {
                        JMP_JNE
                    } else {
                        JMP_JEQ
                    };
                    prog.push(Insn::jmp_imm(op, R1, 0, off));
                }
            }
        }
        prog.push(Insn::alu64_imm(ALU_MOV, R0, i32::from(*allow)));
        prog.push(Insn::exit());
        debug_assert_eq!(prog.len(), next_block);
    }
    let last = catch_all.unwrap_or(filter.default_allow);
    prog.push(Insn::alu64_imm(ALU_MOV, R0, i32::from(last)));
    prog.push(Insn::exit());
    Ok(prog)
}

/// The program as text, one instruction a line with its index, as in the
/// verifier's log.
pub fn listing(prog: &[Insn]) -> String {
    prog.iter()
        .enumerate()
        .map(|(i, insn)| format!("{i}: {insn}\n"))
        .collect()
}
