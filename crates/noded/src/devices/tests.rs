use super::bpf::{self, Insn};
use super::interp;
use super::*;

const GPU: u32 = 195;

fn gpus(n: u32) -> Vec<Device> {
    (0..n).map(|i| Device::char(GPU, i)).collect()
}

fn block(major: u32, minor: u32) -> Device {
    Device {
        kind: DeviceKind::Block,
        major,
        minor,
    }
}

/// The verdict of the assembled program, run in the interpreter.
fn verdict(prog: &[Insn], kind: DeviceKind, major: u32, minor: u32, access: Access) -> bool {
    let ctx = interp::ctx(kind, major, minor, access.bits());
    match interp::run(prog, &ctx) {
        Ok(1) => true,
        Ok(0) => false,
        other => panic!("program returned {other:?}:\n{}", bpf::listing(prog)),
    }
}

/// Assembles `filter`, checks the program as the verifier would, and
/// compares it with `Filter::allows` on every request over a grid of
/// device numbers and all seven access combinations.
fn assemble_checked(filter: &Filter) -> Vec<Insn> {
    let prog = assemble(filter).unwrap();
    interp::check_reachable(&prog).unwrap_or_else(|e| panic!("{e}:\n{}", bpf::listing(&prog)));
    for kind in [DeviceKind::Char, DeviceKind::Block] {
        for major in [0, 1, 8, GPU, GPU + 1] {
            for minor in [0, 1, 2, 3, 5, 255] {
                for bits in 1..=7 {
                    let access = Access::from_bits(bits);
                    assert_eq!(
                        verdict(&prog, kind, major, minor, access),
                        filter.allows(kind, major, minor, access),
                        "{kind:?} {major}:{minor} {access} under {filter:?}:\n{}",
                        bpf::listing(&prog)
                    );
                }
            }
        }
    }
    prog
}

#[test]
fn access_prints_in_the_kernels_order() {
    assert_eq!(Access::ALL.to_string(), "rwm");
    assert_eq!(Access::READ.union(Access::MKNOD).to_string(), "rm");
    assert_eq!(Access::WRITE.to_string(), "w");
    assert_eq!(Device::char(GPU, 2).v1_rule(Access::ALL), "c 195:2 rwm");
    assert_eq!(block(8, 0).v1_rule(Access::READ), "b 8:0 r");
}

#[test]
fn device_from_path_reads_the_device_number() {
    assert_eq!(
        Device::from_path(Path::new("/dev/null")).unwrap(),
        Device::char(1, 3)
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, "x").unwrap();
    assert!(matches!(
        Device::from_path(&file),
        Err(DeviceError::NotADevice { .. })
    ));
    let err = Device::from_path(&dir.path().join("missing")).unwrap_err();
    assert!(matches!(err, DeviceError::Stat { .. }), "{err}");
    assert!(err.to_string().contains("missing"), "{err}");
}

#[test]
fn v1_lines_deny_the_devices_not_given_and_allow_the_given() {
    let node = gpus(4);
    let lines = v1::lines(&node, &[node[1], node[1]]);
    assert_eq!(lines.deny, ["c 195:0 rwm", "c 195:2 rwm", "c 195:3 rwm"]);
    assert_eq!(lines.allow, ["c 195:1 rwm"]);

    // Given everything: nothing to deny.
    let all = v1::lines(&node, &node);
    assert!(all.deny.is_empty());
    assert_eq!(all.allow.len(), 4);

    // Given nothing: everything denied, duplicates in the node's list once.
    let none = v1::lines(&[node[3], node[0], node[3]], &[]);
    assert_eq!(none.deny, ["c 195:0 rwm", "c 195:3 rwm"]);
    assert!(none.allow.is_empty());
}

#[test]
fn v1_write_puts_each_rule_in_its_file_of_a_fake_tree() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["devices.deny", "devices.allow"] {
        std::fs::write(dir.path().join(f), "").unwrap();
    }
    let node = gpus(3);
    v1::write(dir.path(), &v1::lines(&node, &node[2..])).unwrap();
    // A regular file concatenates the writes; cgroupfs takes each as a rule.
    let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
    assert_eq!(read("devices.deny"), "c 195:0 rwmc 195:1 rwm");
    assert_eq!(read("devices.allow"), "c 195:2 rwm");

    let err = v1::write(&dir.path().join("gone"), &v1::lines(&node, &[])).unwrap_err();
    assert!(err.to_string().contains("devices.deny"), "{err}");
}

#[test]
fn insn_has_the_kernels_layout() {
    assert_eq!(std::mem::size_of::<Insn>(), 8);
    // r2 = *(u32 *)(r1 + 4): opcode 0x61, dst 2 in the low nibble, src 1.
    let insn = Insn::ldx_w(2, 1, 4);
    assert_eq!(insn.to_bytes(), [0x61, 0x12, 4, 0, 0, 0, 0, 0]);
    assert_eq!((insn.dst(), insn.src()), (2, 1));
    assert_eq!(
        Insn::jmp_imm(bpf::JMP_JNE, 4, 195, 2).to_bytes(),
        [0x55, 0x04, 2, 0, 195, 0, 0, 0]
    );
    assert_eq!(Insn::exit().to_bytes(), [0x95, 0, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn slurm_filter_program_denies_one_gpu() {
    let node = gpus(2);
    let prog = assemble_checked(&Filter::deny_unallocated(&node, &node[..1]));
    assert_eq!(
        bpf::listing(&prog),
        "\
0: r2 = *(u32 *)(r1 +0)
1: w2 &= 65535
2: r4 = *(u32 *)(r1 +4)
3: r5 = *(u32 *)(r1 +8)
4: if r2 != 2 goto +4
5: if r4 != 195 goto +3
6: if r5 != 1 goto +2
7: r0 = 0
8: exit
9: r0 = 1
10: exit
"
    );
}

#[test]
fn slurm_filter_verdicts_for_a_table_of_requests() {
    // Node with four GPUs; this level was given 1 and 3.
    let node = gpus(4);
    let prog = assemble_checked(&Filter::deny_unallocated(&node, &[node[1], node[3]]));
    let c = DeviceKind::Char;
    let cases = [
        (c, GPU, 1, Access::READ.union(Access::WRITE), true),
        (c, GPU, 3, Access::ALL, true),
        (c, GPU, 0, Access::READ, false),
        (c, GPU, 0, Access::WRITE, false),
        (c, GPU, 0, Access::MKNOD, false),
        (c, GPU, 2, Access::ALL, false),
        // Not a GRES device: untouched.
        (c, GPU, 4, Access::ALL, true),
        (c, 1, 3, Access::ALL, true),
        // The same numbers as a block device: another device.
        (DeviceKind::Block, GPU, 0, Access::READ, true),
    ];
    for (kind, major, minor, access, allowed) in cases {
        assert_eq!(
            verdict(&prog, kind, major, minor, access),
            allowed,
            "{kind:?} {major}:{minor} {access}"
        );
    }
}

#[test]
fn whitelist_filter_allows_only_what_it_lists() {
    let filter = Filter::allow_only(vec![
        Rule::device(Device::char(1, 3), Access::ALL, true),
        Rule::device(
            Device::char(GPU, 0),
            Access::READ.union(Access::WRITE),
            true,
        ),
        // Any partition of disk 8 (minor wildcard), read only.
        Rule {
            kind: Some(DeviceKind::Block),
            major: Some(8),
            minor: None,
            access: Access::READ,
            allow: true,
        },
        // Any device with major 1, of either kind, mknod only.
        Rule {
            kind: None,
            major: Some(1),
            minor: None,
            access: Access::MKNOD,
            allow: true,
        },
    ]);
    let prog = assemble_checked(&filter);
    let (c, b) = (DeviceKind::Char, DeviceKind::Block);
    let rw = Access::READ.union(Access::WRITE);
    let cases = [
        (c, 1, 3, Access::ALL, true),
        (c, GPU, 0, rw, true),
        (c, GPU, 0, Access::READ, true),
        // mknod was not in the rule: the whole request fails.
        (c, GPU, 0, Access::ALL, false),
        (c, GPU, 1, Access::READ, false),
        (b, 8, 5, Access::READ, true),
        (b, 8, 5, rw, false),
        (c, 8, 5, Access::READ, false),
        (b, 1, 7, Access::MKNOD, true),
        (c, 1, 7, Access::MKNOD, true),
        (c, 1, 7, Access::READ, false),
        (b, 9, 0, Access::READ, false),
    ];
    for (kind, major, minor, access, allowed) in cases {
        assert_eq!(
            verdict(&prog, kind, major, minor, access),
            allowed,
            "{kind:?} {major}:{minor} {access}"
        );
    }
}

#[test]
fn deny_rules_for_some_access_deny_requests_that_ask_for_it() {
    // v1's `c 1:3 w` in default-allow mode: /dev/null readable, not writable.
    let filter = Filter {
        rules: vec![Rule::device(Device::char(1, 3), Access::WRITE, false)],
        default_allow: true,
    };
    let prog = assemble_checked(&filter);
    let c = DeviceKind::Char;
    assert!(verdict(&prog, c, 1, 3, Access::READ));
    assert!(!verdict(&prog, c, 1, 3, Access::WRITE));
    assert!(!verdict(&prog, c, 1, 3, Access::READ.union(Access::WRITE)));
    assert!(verdict(&prog, c, 1, 5, Access::WRITE));
}

#[test]
fn a_rule_matching_everything_ends_the_program() {
    let everything = Rule {
        kind: None,
        major: None,
        minor: None,
        access: Access::ALL,
        allow: true,
    };
    let filter = Filter::allow_only(vec![
        Rule::device(Device::char(GPU, 1), Access::ALL, false),
        everything,
        // Never reached: the verifier would refuse its instructions.
        Rule::device(Device::char(GPU, 2), Access::ALL, false),
    ]);
    let prog = assemble_checked(&filter);
    assert_eq!(prog.len(), 4 + 5 + 2, "{}", bpf::listing(&prog));

    // No rules at all: just the default; an empty access set is no rule.
    let deny_all = Filter::allow_only(vec![Rule::device(GPU_DEV, Access::NONE, true)]);
    assert_eq!(
        bpf::listing(&assemble_checked(&deny_all)),
        "0: r0 = 0\n1: exit\n"
    );
}

const GPU_DEV: Device = Device {
    kind: DeviceKind::Char,
    major: GPU,
    minor: 0,
};

#[test]
fn numbers_that_cannot_be_compared_are_refused() {
    let filter = Filter::deny_unallocated(&[Device::char(u32::MAX, 0)], &[]);
    let err = assemble(&filter).unwrap_err();
    assert!(err.to_string().contains("major number 4294967295"), "{err}");
}

#[test]
fn interpreter_follows_the_ebpf_semantics_it_claims() {
    use bpf::*;
    let ctx = interp::ctx(DeviceKind::Char, 0xffff_fff0, 7, 2);
    // 32-bit vs 64-bit compare of a loaded u32 with a negative immediate.
    let prog = [
        Insn::ldx_w(4, 1, CTX_MAJOR),
        // 64-bit: 0x00000000fffffff0 != 0xfffffffffffffff0, not taken.
        Insn::jmp_imm(JMP_JEQ, 4, -16, 2),
        // 32-bit: equal, taken.
        Insn::new(CLASS_JMP32 | SRC_K | JMP_JEQ, 4, 0, 2, -16),
        Insn::alu64_imm(ALU_MOV, 0, 0),
        Insn::exit(),
        Insn::alu64_imm(ALU_MOV, 0, 5),
        Insn::exit(),
    ];
    assert_eq!(interp::run(&prog, &ctx), Ok(5));

    // 32-bit ALU clears the upper half; 64-bit keeps it.
    let prog = [
        Insn::alu64_imm(ALU_MOV, 0, -1),
        Insn::alu32_imm(ALU_ADD, 0, 0),
        Insn::exit(),
    ];
    assert_eq!(interp::run(&prog, &ctx), Ok(0xffff_ffff));
    let prog = [Insn::alu64_imm(ALU_MOV, 0, -1), Insn::exit()];
    assert_eq!(interp::run(&prog, &ctx), Ok(u64::MAX));

    // What the verifier refuses, the interpreter refuses.
    let uninit = [Insn::alu64_imm(ALU_ADD, 0, 1), Insn::exit()];
    assert!(interp::run(&uninit, &ctx)
        .unwrap_err()
        .contains("r0 read before"));
    let out_of_ctx = [Insn::ldx_w(0, 1, 12), Insn::exit()];
    assert!(interp::run(&out_of_ctx, &ctx)
        .unwrap_err()
        .contains("beyond the context"));
    let off_end = [Insn::alu64_imm(ALU_MOV, 0, 1)];
    assert!(interp::run(&off_end, &ctx)
        .unwrap_err()
        .contains("off the end"));
    let dead = [
        Insn::alu64_imm(ALU_MOV, 0, 1),
        Insn::exit(),
        Insn::alu64_imm(ALU_MOV, 0, 0),
        Insn::exit(),
    ];
    assert!(interp::check_reachable(&dead)
        .unwrap_err()
        .contains("instruction 2"));
}
