/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_TESTS_NET_FRAMES_H
#define BRISK_TESTS_NET_FRAMES_H

/*
 * Frames for the tests of net/ (tests/net/test-slirp.c, test-stream.c,
 * test-tap.c), built and read byte for byte from the RFCs, never from
 * brisk's own constants: Ethernet II, IPv4 without options (RFC 791), UDP
 * (RFC 768), TCP without options (RFC 793), ARP for IPv4 over Ethernet (RFC 826), DHCP (RFC 2131, its options RFC
 * 2132), and RFC 1071's checksum with the pseudo-headers of IPv4 (RFC
 * 768, RFC 793 section 3.1) and IPv6 (RFC 8200 section 8.1).  A reader
 * returns false for a frame that is not what it reads, and CHECKs what a
 * sender got wrong in one that is (a checksum, a malformed header).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

/* An Ethernet header and the largest IP datagram: QEMU's and passt's bound. */
#define FRAME_MAX (14 + 65535)

enum { ETH = 14, IPH = 20, UDPH = 8, ARPL = 28 };

/* ---- big-endian fields ---- */

static inline void put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

static inline unsigned get16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

/* ---- checksums ---- */

/* RFC 1071: the one's complement sum of 16-bit words... */
static inline uint32_t sum16(uint32_t s, const uint8_t *p, size_t n)
{
	for (; n > 1; p += 2, n -= 2)
		s += get16(p);
	if (n)
		s += (uint32_t)p[0] << 8;
	return s;
}

/* ...folded and complemented: what goes in the field, and 0 over a good one. */
static inline unsigned csum(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return ~s & 0xffff;
}

/* The pseudo-header of UDP and TCP over IPv4 (RFC 768, RFC 793 section 3.1). */
static inline uint32_t pseudo(uint32_t src, uint32_t dst, unsigned proto, size_t len)
{
	uint8_t ph[12] = { 0 };

	put32(ph, src);
	put32(ph + 4, dst);
	ph[9] = (uint8_t)proto;
	put16(ph + 10, (unsigned)len);
	return sum16(0, ph, sizeof(ph));
}

/* The pseudo-header of an upper layer over IPv6 (RFC 8200 section 8.1),
 * ICMPv6's included (RFC 4443 section 2.3). */
static inline uint32_t pseudo6(const uint8_t *src, const uint8_t *dst, unsigned next,
			       size_t len)
{
	uint8_t ph[40] = { 0 };

	memcpy(ph, src, 16);
	memcpy(ph + 16, dst, 16);
	put32(ph + 32, (uint32_t)len);
	ph[39] = (uint8_t)next;
	return sum16(0, ph, sizeof(ph));
}

/* ---- Ethernet and IPv4 ---- */

static inline void put_eth(uint8_t *f, const uint8_t *dst, const uint8_t *src,
			   unsigned type)
{
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	put16(f + 12, type);
}

/* RFC 791's header without options, TTL 64, its checksum filled in. */
static inline void put_ip(uint8_t *p, unsigned proto, uint32_t src, uint32_t dst,
			  size_t payload)
{
	memset(p, 0, IPH);
	p[0] = 0x45;
	put16(p + 2, (unsigned)(IPH + payload));
	p[8] = 64;
	p[9] = (uint8_t)proto;
	put32(p + 12, src);
	put32(p + 16, dst);
	put16(p + 10, csum(sum16(0, p, IPH)));
}

struct pkt {
	unsigned proto;
	uint32_t src, dst;
	const uint8_t *l4;
	size_t l4_len;
};

/* An IPv4 packet in f (its header checksum checked), or false. */
static inline bool parse_ip(const uint8_t *f, size_t len, struct pkt *p)
{
	const uint8_t *ip = f + ETH;
	size_t ihl, total;

	if (len < ETH + IPH || get16(f + 12) != 0x0800 || ip[0] >> 4 != 4)
		return false;
	ihl = (ip[0] & 15) * 4u;
	total = get16(ip + 2);
	if (ihl < IPH || total < ihl || ETH + total > len) {
		CHECK(!"a malformed IPv4 header");
		return false;
	}
	CHECK_EQ(csum(sum16(0, ip, ihl)), 0);
	*p = (struct pkt){ ip[9], get32(ip + 12), get32(ip + 16), ip + ihl, total - ihl };
	return true;
}

/* ---- ARP (RFC 826: Ethernet, 1, and IPv4, 0x0800) ---- */

/* From mac at spa, in both layers, to tha at tpa; the frame's length. */
static inline size_t arp_frame(uint8_t *f, unsigned op, const uint8_t *eth_dst,
			       const uint8_t *mac, uint32_t spa, const uint8_t *tha,
			       uint32_t tpa)
{
	uint8_t *a = f + ETH;

	put_eth(f, eth_dst, mac, 0x0806);
	put16(a, 1);
	put16(a + 2, 0x0800);
	a[4] = 6;
	a[5] = 4;
	put16(a + 6, op);
	memcpy(a + 8, mac, 6);
	put32(a + 14, spa);
	memcpy(a + 18, tha, 6);
	put32(a + 24, tpa);
	return ETH + ARPL;
}

struct arp {
	unsigned op;
	const uint8_t *sha, *tha;
	uint32_t spa, tpa;
};

static inline bool parse_arp(const uint8_t *f, size_t len, struct arp *a)
{
	const uint8_t *p = f + ETH;

	if (len < ETH + ARPL || get16(f + 12) != 0x0806 || get16(p) != 1 ||
	    get16(p + 2) != 0x0800 || p[4] != 6 || p[5] != 4)
		return false;
	*a = (struct arp){ get16(p + 6), p + 8, p + 18, get32(p + 14), get32(p + 24) };
	return true;
}

/* ---- TCP (RFC 793) ---- */

enum { TCPH = 20 };
enum { TCP_FIN = 1, TCP_SYN = 2, TCP_RST = 4, TCP_PSH = 8, TCP_ACK = 16 };

struct seg {
	uint32_t src, dst;
	unsigned sport, dport;
	uint32_t seq, ack;
	unsigned flags;
	const uint8_t *data;
	size_t len;
};

/* A segment without options from src_mac to dst_mac, window 65535; the frame's length. */
static inline size_t tcp_frame_eth(uint8_t *f, const uint8_t *dst_mac, const uint8_t *src_mac,
				   const struct seg *s)
{
	uint8_t *t = f + ETH + IPH;
	size_t n = TCPH + s->len;

	put_eth(f, dst_mac, src_mac, 0x0800);
	put_ip(f + ETH, 6, s->src, s->dst, n);
	memset(t, 0, TCPH);
	put16(t, s->sport);
	put16(t + 2, s->dport);
	put32(t + 4, s->seq);
	put32(t + 8, s->ack);
	t[12] = 5 << 4;
	t[13] = (uint8_t)s->flags;
	put16(t + 14, 65535);
	if (s->len)
		memcpy(t + TCPH, s->data, s->len);
	put16(t + 16, csum(sum16(pseudo(s->src, s->dst, 6, n), t, n)));
	return ETH + IPH + n;
}

/* A TCP segment in f (both checksums checked), or false. */
static inline bool parse_tcp(const uint8_t *f, size_t len, struct seg *s)
{
	struct pkt p;
	size_t off;

	if (!parse_ip(f, len, &p) || p.proto != 6 || p.l4_len < TCPH)
		return false;
	CHECK_EQ(csum(sum16(pseudo(p.src, p.dst, 6, p.l4_len), p.l4, p.l4_len)), 0);
	off = (p.l4[12] >> 4) * 4u;
	if (off < TCPH || off > p.l4_len)
		return false;
	*s = (struct seg){ p.src, p.dst, get16(p.l4), get16(p.l4 + 2), get32(p.l4 + 4),
			   get32(p.l4 + 8), p.l4[13] & 0x3fu, p.l4 + off, p.l4_len - off };
	return true;
}

/* ---- DHCP (RFC 2131 figure 1, options RFC 2132) ---- */

enum { DHCP_DISCOVER = 1, DHCP_OFFER = 2, DHCP_REQUEST = 3, DHCP_ACK = 5 };
/* The fixed fields, the cookie and a 312-byte options field: RFC 2131's
 * 576-byte datagram. */
#define DHCP_LEN 548
#define DHCP_COOKIE 0x63825363

/*
 * A BOOTREQUEST of type from mac, broadcast from 0.0.0.0:68 (UDP checksum
 * 0: none), asking for want_ip of server when given, and for the mask,
 * router, DNS server and host name; the frame's length.
 */
static inline size_t dhcp_frame(uint8_t *f, const uint8_t *mac, unsigned type,
				uint32_t xid, uint32_t want_ip, uint32_t server)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t *u = f + ETH + IPH, *b = u + UDPH, *o = b + 240;

	put_eth(f, bcast, mac, 0x0800);
	put_ip(f + ETH, 17, 0, 0xffffffff, UDPH + DHCP_LEN);
	memset(u, 0, UDPH + DHCP_LEN);
	put16(u, 68);
	put16(u + 2, 67);
	put16(u + 4, UDPH + DHCP_LEN);
	b[0] = 1;				/* BOOTREQUEST */
	b[1] = 1;				/* Ethernet */
	b[2] = 6;
	put32(b + 4, xid);
	memcpy(b + 28, mac, 6);			/* chaddr */
	put32(b + 236, DHCP_COOKIE);
	*o++ = 53, *o++ = 1, *o++ = (uint8_t)type;
	if (want_ip)
		*o++ = 50, *o++ = 4, put32(o, want_ip), o += 4;
	if (server)
		*o++ = 54, *o++ = 4, put32(o, server), o += 4;
	*o++ = 55, *o++ = 4, *o++ = 1, *o++ = 3, *o++ = 6, *o++ = 12;
	*o = 255;
	return ETH + IPH + UDPH + DHCP_LEN;
}

struct dhcp {
	unsigned type;
	uint32_t yiaddr, server, router, dns, mask;
	char hostname[256];
};

static inline void dhcp_option(unsigned code, const uint8_t *v, unsigned len,
			       struct dhcp *d)
{
	uint32_t a = len >= 4 ? get32(v) : 0;

	switch (code) {
	case 53: d->type = len ? v[0] : 0; break;
	case 54: d->server = a; break;
	case 1: d->mask = a; break;
	case 3: d->router = a; break;
	case 6: d->dns = a; break;
	case 12: snprintf(d->hostname, sizeof(d->hostname), "%.*s", (int)len, (const char *)v);
		break;
	}
}

static inline bool dhcp_options(const uint8_t *o, size_t n, struct dhcp *d)
{
	for (size_t i = 0; i < n && o[i] != 255;) {
		if (!o[i]) {
			i++;
			continue;
		}
		if (i + 2 > n || i + 2 + o[i + 1] > n)
			return false;
		dhcp_option(o[i], o + i + 2, o[i + 1], d);
		i += 2u + o[i + 1];
	}
	return d->type;
}

/* A BOOTREPLY to xid, from port 67 to 68, for mac, its options read into d;
 * or false. */
static inline bool parse_dhcp(const uint8_t *f, size_t len, const uint8_t *mac,
			      uint32_t xid, struct dhcp *d)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	struct pkt p;
	const uint8_t *b;

	if (!parse_ip(f, len, &p) || p.proto != 17 || p.l4_len < UDPH + 240 ||
	    get16(p.l4) != 67 || get16(p.l4 + 2) != 68)
		return false;
	if (get16(p.l4 + 6))
		CHECK_EQ(csum(sum16(pseudo(p.src, p.dst, 17, p.l4_len), p.l4, p.l4_len)), 0);
	b = p.l4 + UDPH;
	if (b[0] != 2 || get32(b + 4) != xid || get32(b + 236) != DHCP_COOKIE)
		return false;
	CHECK(!memcmp(b + 28, mac, 6));
	CHECK(!memcmp(f, mac, 6) || !memcmp(f, bcast, 6));
	*d = (struct dhcp){ .yiaddr = get32(b + 16) };
	return dhcp_options(b + 240, p.l4_len - UDPH - 240, d);
}

#endif
