//! Ports of this machine's loopback: which one a forward can listen on
//! (`envctl forward`), asked of the kernel by binding, never guessed.

use std::net::{Ipv4Addr, TcpListener};

/// `preferred` on 127.0.0.1 when nothing listens there, else a free port the kernel
/// gives. The port is free when asked; whoever binds it next (ssh) may still lose a race,
/// and then says so itself.
pub fn free_loopback_port(preferred: u16) -> std::io::Result<u16> {
    if preferred != 0 && TcpListener::bind((Ipv4Addr::LOCALHOST, preferred)).is_ok() {
        return Ok(preferred);
    }
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

/// Whether this machine can listen on `address`:`port` now (`""` or `0.0.0.0`: every
/// address; an address that is not this machine's, or not an address: `true`, since
/// nothing here can say otherwise).
pub fn bindable(address: &str, port: u16) -> bool {
    let address = match address.trim_start_matches('[').trim_end_matches(']') {
        "" => "0.0.0.0",
        address => address,
    };
    let Ok(ip) = address.parse::<std::net::IpAddr>() else {
        return true;
    };
    match TcpListener::bind((ip, port)) {
        Ok(_) => true,
        Err(error) => error.kind() != std::io::ErrorKind::AddrInUse,
    }
}

/// Whether something accepts connections on 127.0.0.1:`port`.
pub fn accepts(port: u16) -> bool {
    std::net::TcpStream::connect_timeout(
        &(Ipv4Addr::LOCALHOST, port).into(),
        std::time::Duration::from_millis(200),
    )
    .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_port_gives_way_to_a_free_one() {
        let taken = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = taken.local_addr().unwrap().port();
        let given = free_loopback_port(port).unwrap();
        assert_ne!(given, port);
        assert!(accepts(port));
        assert!(!bindable("127.0.0.1", port));
        assert!(!bindable("", port));
        assert!(bindable("not an address", port));
        drop(taken);
        assert_eq!(free_loopback_port(port).unwrap(), port);
        assert!(bindable("127.0.0.1", port));
    }
}
