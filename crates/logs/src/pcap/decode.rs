//! From a captured frame to a TCP segment: the link layer, IPv4 or IPv6,
//! then TCP. Anything else (ARP, UDP, IP fragments after the first, frames
//! cut before the TCP header) is not a segment and is passed over, as alp
//! passes over packets without a TCP layer.

use super::file::LinkType;
use std::net::IpAddr;

/// A TCP segment's addressing, sequence and flags, with its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment<'a> {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number of the first payload byte (of the SYN itself when
    /// `syn`).
    pub seq: u32,
    /// SYN flag.
    pub syn: bool,
    /// FIN flag.
    pub fin: bool,
    /// RST flag.
    pub rst: bool,
    /// The payload, bounded by the IP length (Ethernet padding excluded).
    pub payload: &'a [u8],
}

const IPV4: u16 = 0x0800;
const IPV6: u16 = 0x86dd;

/// The TCP segment in `frame`, if it holds one.
pub fn segment(link: LinkType, little_endian_writer: bool, frame: &[u8]) -> Option<Segment<'_>> {
    let (ethertype, ip) = match link {
        LinkType::Ethernet => {
            let mut ethertype = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
            let mut at = 14;
            // 802.1Q and 802.1ad tags: four bytes each before the real type.
            while ethertype == 0x8100 || ethertype == 0x88a8 {
                ethertype = u16::from_be_bytes([*frame.get(at + 2)?, *frame.get(at + 3)?]);
                at += 4;
            }
            (ethertype, frame.get(at..)?)
        }
        LinkType::LinuxSll => (
            u16::from_be_bytes([*frame.get(14)?, *frame.get(15)?]),
            frame.get(16..)?,
        ),
        LinkType::LinuxSll2 => (
            u16::from_be_bytes([*frame.first()?, *frame.get(1)?]),
            frame.get(20..)?,
        ),
        LinkType::Null | LinkType::Loop => {
            let b = [
                *frame.first()?,
                *frame.get(1)?,
                *frame.get(2)?,
                *frame.get(3)?,
            ];
            let family = if link == LinkType::Loop || !little_endian_writer {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            };
            let ethertype = match family {
                2 => IPV4,
                // AF_INET6 differs between BSDs: 24, 28 or 30.
                24 | 28 | 30 => IPV6,
                _ => return None,
            };
            (ethertype, frame.get(4..)?)
        }
        LinkType::Raw => match frame.first()? >> 4 {
            4 => (IPV4, frame),
            6 => (IPV6, frame),
            _ => return None,
        },
    };
    match ethertype {
        IPV4 => ipv4(ip),
        IPV6 => ipv6(ip),
        _ => None,
    }
}

fn ipv4(ip: &[u8]) -> Option<Segment<'_>> {
    if ip.first()? >> 4 != 4 {
        return None;
    }
    let header = usize::from(ip.first()? & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([*ip.get(2)?, *ip.get(3)?]));
    let fragment_offset = u16::from_be_bytes([*ip.get(6)?, *ip.get(7)?]) & 0x1fff;
    if header < 20 || total < header || fragment_offset != 0 || *ip.get(9)? != 6 {
        return None;
    }
    let src: [u8; 4] = ip.get(12..16)?.try_into().ok()?;
    let dst: [u8; 4] = ip.get(16..20)?.try_into().ok()?;
    // A frame cut by the snapshot length keeps what was captured.
    let body = ip.get(header..total.min(ip.len()))?;
    tcp(IpAddr::from(src), IpAddr::from(dst), body)
}

fn ipv6(ip: &[u8]) -> Option<Segment<'_>> {
    if ip.first()? >> 4 != 6 {
        return None;
    }
    let payload_len = usize::from(u16::from_be_bytes([*ip.get(4)?, *ip.get(5)?]));
    let mut next = *ip.get(6)?;
    let src: [u8; 16] = ip.get(8..24)?.try_into().ok()?;
    let dst: [u8; 16] = ip.get(24..40)?.try_into().ok()?;
    let mut body = ip.get(40..(40 + payload_len).min(ip.len()))?;
    // Extension headers before TCP: hop-by-hop, routing, destination
    // options. A fragment header (44) means no whole segment here.
    while matches!(next, 0 | 43 | 60) {
        let len = (usize::from(*body.get(1)?) + 1) * 8;
        next = *body.first()?;
        body = body.get(len..)?;
    }
    if next != 6 {
        return None;
    }
    tcp(IpAddr::from(src), IpAddr::from(dst), body)
}

fn tcp(src: IpAddr, dst: IpAddr, t: &[u8]) -> Option<Segment<'_>> {
    let header = usize::from(t.get(12)? >> 4) * 4;
    if header < 20 {
        return None;
    }
    let flags = *t.get(13)?;
    Some(Segment {
        src,
        dst,
        src_port: u16::from_be_bytes([*t.first()?, *t.get(1)?]),
        dst_port: u16::from_be_bytes([*t.get(2)?, *t.get(3)?]),
        seq: u32::from_be_bytes(t.get(4..8)?.try_into().ok()?),
        syn: flags & 0x02 != 0,
        fin: flags & 0x01 != 0,
        rst: flags & 0x04 != 0,
        payload: t.get(header..)?,
    })
}
