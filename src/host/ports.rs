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
        drop(taken);
        assert_eq!(free_loopback_port(port).unwrap(), port);
    }
}
