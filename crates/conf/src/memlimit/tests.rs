use super::*;

fn ram_only(allowed: f64) -> MemConstraints {
    MemConstraints {
        constrain_ram: true,
        allowed_ram_percent: allowed,
        ..MemConstraints::default()
    }
}

#[test]
fn nothing_constrained_sets_no_limit() {
    assert_eq!(mem_limits(1000, 4000, &MemConstraints::default()), None);
}

#[test]
fn the_hard_limit_is_allowed_ram_space_of_the_allocation() {
    // cgroup.conf(5): soft limit at the allocation, hard limit at
    // AllowedRAMSpace/100 times it (101.5 allowed).
    let l = mem_limits(1000, 4000, &ram_only(110.0)).unwrap();
    assert_eq!(l.ram_bytes, 1100 * MIB);
    assert_eq!(l.soft_bytes, 1000 * MIB);
    assert_eq!(l.ram_swap_bytes, None);
    let l = mem_limits(1000, 4000, &ram_only(101.5)).unwrap();
    assert_eq!(l.ram_bytes, 1015 * MIB);
}

#[test]
fn below_100_percent_the_soft_limit_is_the_hard_one() {
    let l = mem_limits(1000, 4000, &ram_only(90.0)).unwrap();
    assert_eq!(l.ram_bytes, 900 * MIB);
    assert_eq!(l.soft_bytes, 900 * MIB);
}

#[test]
fn min_ram_space_is_a_floor() {
    // The default MinRAMSpace is 30 MB.
    let l = mem_limits(10, 4000, &ram_only(100.0)).unwrap();
    assert_eq!(l.ram_bytes, 30 * MIB);
    let c = MemConstraints {
        min_ram_mb: 200,
        ..ram_only(100.0)
    };
    assert_eq!(mem_limits(100, 4000, &c).unwrap().ram_bytes, 200 * MIB);
}

#[test]
fn max_ram_percent_caps_the_limit_and_is_the_limit_without_allocation() {
    let c = MemConstraints {
        max_ram_percent: 50.0,
        ..ram_only(100.0)
    };
    assert_eq!(mem_limits(0, 1000, &c).unwrap().ram_bytes, 500 * MIB);
    assert_eq!(mem_limits(800, 1000, &c).unwrap().ram_bytes, 500 * MIB);
    assert_eq!(mem_limits(100, 1000, &c).unwrap().ram_bytes, 100 * MIB);
    // With the default 100 percent: the whole node.
    assert_eq!(
        mem_limits(0, 1000, &ram_only(100.0)).unwrap().ram_bytes,
        1000 * MIB
    );
}

#[test]
fn swap_adds_allowed_swap_space_of_the_allocation() {
    let c = MemConstraints {
        constrain_swap: true,
        allowed_swap_percent: 50.0,
        ..ram_only(100.0)
    };
    let l = mem_limits(1000, 4000, &c).unwrap();
    assert_eq!(l.ram_bytes, 1000 * MIB);
    // v1 memsw is RAM + swap, v2 swap.max the swap alone.
    assert_eq!(l.ram_swap_bytes, Some(1500 * MIB));
    assert_eq!(l.swap_only_bytes(), Some(500 * MIB));
}

#[test]
fn allowed_swap_space_zero_limits_ram_and_swap_to_the_ram_limit() {
    let c = MemConstraints {
        constrain_swap: true,
        ..ram_only(100.0)
    };
    let l = mem_limits(1000, 4000, &c).unwrap();
    assert_eq!(l.ram_swap_bytes, Some(1000 * MIB));
    assert_eq!(l.swap_only_bytes(), Some(0));
}

#[test]
fn max_swap_percent_caps_ram_plus_swap() {
    let c = MemConstraints {
        constrain_swap: true,
        allowed_swap_percent: 100.0,
        max_ram_percent: 50.0,
        max_swap_percent: 10.0,
        ..ram_only(100.0)
    };
    // RAM capped at 500 MB, RAM + swap at 500 + 100 MB.
    let l = mem_limits(800, 1000, &c).unwrap();
    assert_eq!(l.ram_bytes, 500 * MIB);
    assert_eq!(l.ram_swap_bytes, Some(600 * MIB));
}

#[test]
fn swap_alone_makes_the_ram_limit_the_ram_plus_swap_limit() {
    // cgroup.conf(5) ConstrainSwapSpace: with ConstrainRAMSpace=no,
    // AllowedRAMSpace counts as 100 and both limits are RAM + swap.
    let c = MemConstraints {
        constrain_swap: true,
        allowed_ram_percent: 80.0,
        allowed_swap_percent: 10.0,
        ..MemConstraints::default()
    };
    let l = mem_limits(1000, 4000, &c).unwrap();
    assert_eq!(l.ram_bytes, 1100 * MIB);
    assert_eq!(l.ram_swap_bytes, Some(1100 * MIB));
    assert_eq!(l.soft_bytes, 1000 * MIB);
}

#[test]
fn per_cpu_and_per_gpu_requests_scale_with_the_node_share() {
    assert_eq!(allocated_mb(MemRequest::PerNode(100), 4, 0), 100);
    assert_eq!(allocated_mb(MemRequest::PerCpu(100), 4, 0), 400);
    assert_eq!(allocated_mb(MemRequest::PerGpu(1000), 8, 2), 2000);
    assert_eq!(allocated_mb(MemRequest::Unset, 8, 2), 0);
}
