use super::*;
use std::net::Ipv4Addr;

fn limits() -> Limits {
    Limits {
        unauthenticated: 4,
        unauthenticated_per_peer: 3,
        deadline: Duration::from_millis(1500),
        authenticated: 3,
        authenticated_per_uid: 2,
    }
}

fn ip(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, 0, last))
}

/// Whether the ticket has been told to close (without waiting).
fn was_shed(t: &Ticket) -> bool {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        tokio::time::timeout(Duration::from_millis(5), t.shed())
            .await
            .is_ok()
    })
}

#[test]
fn a_full_pool_closes_its_oldest_connection_and_lets_the_new_one_in() {
    let adm = Admission::new(limits());
    let a = adm.arrive(ip(1));
    let b = adm.arrive(ip(2));
    let c = adm.arrive(ip(3));
    let d = adm.arrive(ip(4));
    assert_eq!(adm.counts(), (4, 0));
    assert!(!was_shed(&a));
    let e = adm.arrive(ip(5));
    assert!(was_shed(&a), "the oldest makes room");
    assert!(![&b, &c, &d, &e].iter().any(|t| was_shed(t)));
    assert_eq!(adm.counts(), (4, 0));
    assert_eq!(adm.shed_count(), 1);
    drop(a);
    assert_eq!(adm.counts(), (4, 0), "a shed ticket is counted once");
}

#[test]
fn one_address_over_its_share_closes_its_own_oldest_not_anothers() {
    let adm = Admission::new(limits());
    let other = adm.arrive(ip(9));
    let mine: Vec<Ticket> = (0..3).map(|_| adm.arrive(ip(1))).collect();
    let newest = adm.arrive(ip(1));
    assert!(was_shed(&mine[0]));
    assert!(!was_shed(&other), "another address keeps its place");
    assert!(!was_shed(&mine[1]) && !was_shed(&newest));
    // IPv4 through an IPv6 socket is the same address.
    let mapped = adm.arrive(IpAddr::V6(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped()));
    assert!(was_shed(&mine[1]));
    assert_eq!(mapped.peer(), ip(1));
}

#[test]
fn an_authenticated_connection_leaves_the_pool_and_is_never_shed() {
    let adm = Admission::new(limits());
    let real = adm.arrive(ip(1));
    assert!(real.read_budget(0).is_some());
    real.authenticate(1000, false).unwrap();
    assert!(real.is_authenticated());
    assert_eq!(real.read_budget(0), None);
    assert_eq!(adm.counts(), (0, 1));
    let flood: Vec<Ticket> = (0..20).map(|i| adm.arrive(ip(i))).collect();
    assert!(!was_shed(&real));
    assert_eq!(adm.counts(), (4, 1));
    drop(flood);
    drop(real);
    assert_eq!(adm.counts(), (0, 0));
}

#[test]
fn a_shed_that_raced_the_credential_does_not_close_the_authenticated_connection() {
    let adm = Admission::new(Limits {
        unauthenticated: 1,
        ..limits()
    });
    let real = adm.arrive(ip(1));
    let _newer = adm.arrive(ip(2));
    // The credential had arrived: it is honoured, and the stored signal
    // no longer closes the connection.
    real.authenticate(1000, false).unwrap();
    assert!(!was_shed(&real));
    assert_eq!(adm.counts(), (1, 1));
}

#[test]
fn users_are_held_to_their_share_and_the_daemons_users_to_none() {
    let adm = Admission::new(limits());
    let t: Vec<Ticket> = (0..6).map(|i| adm.arrive(ip(i))).collect();
    t[0].authenticate(1000, false).unwrap();
    t[1].authenticate(1000, false).unwrap();
    assert_eq!(
        t[2].authenticate(1000, false),
        Err(Refused::PerUser { uid: 1000, held: 2 })
    );
    t[3].authenticate(1001, false).unwrap();
    assert_eq!(
        t[4].authenticate(1002, false),
        Err(Refused::Full { held: 3 })
    );
    t[5].authenticate(0, true).unwrap();
    assert_eq!(adm.counts(), (0, 3));
    drop(t);
    assert_eq!(adm.counts(), (0, 0));
    let again = adm.arrive(ip(1));
    again.authenticate(1002, false).unwrap();
}

#[test]
fn the_deadline_runs_from_the_connect_and_grows_with_a_large_first_frame() {
    let adm = Admission::new(limits());
    let t = adm.arrive(ip(1));
    let small = t.read_budget(100).unwrap();
    assert!(small <= Duration::from_millis(1500) && small > Duration::from_millis(1000));
    let large = t.read_budget(16 << 20).unwrap();
    assert!(large > Duration::from_secs(16), "{large:?}");
}

#[test]
fn a_forgiven_shedding_does_not_close_the_connection_later() {
    let adm = Admission::new(limits());
    let mine: Vec<Ticket> = (0..3).map(|_| adm.arrive(ip(1))).collect();
    let _newest = adm.arrive(ip(1));
    // Shed while its request was already waiting (rpc::lobby): served.
    mine[0].forgive_shed();
    assert!(!was_shed(&mine[0]));
    // Forgiving a ticket that was never shed changes nothing.
    mine[1].forgive_shed();
    let _newer = adm.arrive(ip(1));
    assert!(was_shed(&mine[1]));
}
