package secretscan

import "bytes"

// Percent and HTML escapes. An encoder may leave any subset of a value's
// bytes literal and print the others as %XX (either hex case) or as HTML
// entities (&amp;, &#35;, &#x23;): Python's quote keeps '/', jq's @uri and
// encodeURIComponent keep !~*'(), a URL's password keeps $&+. No fixed
// table of per-byte forms covers every such choice, so the text around an
// escape is read once more, decoded, in lane laneDecoded: each escape
// becomes the byte it stands for (a symbol if that is a letter or digit,
// else a separator, as in the plain view), and the value's own forms (raw,
// reversed, ...) match there whatever the encoder chose.
//
// Only tokens that hold an escape are decoded: from the escape, the bytes
// up to the nearest line end or other control byte, at most
// maxEscapeReach bytes either way of an escape. Finding them costs two IndexByte passes over
// the text.
const maxEscapeReach = 512

// escapeAt returns the byte the escape at buf[i] stands for, its length
// and true; or false if buf[i:] does not start a complete escape.
func escapeAt(buf []byte, i int) (byte, int, bool) {
	switch buf[i] {
	case '%':
		if i+2 < len(buf) && class[buf[i+1]]&clHex != 0 && class[buf[i+2]]&clHex != 0 {
			return unhex(buf[i+1])<<4 | unhex(buf[i+2]), 3, true
		}
	case '&':
		return entityAt(buf, i)
	}
	return 0, 0, false
}

// entityAt decodes an HTML character reference: &name; (a separator: no
// named reference stands for an ASCII letter or digit; the byte returned is
// that of &amp; &lt; &gt; &quot; &apos;, else 0), &#NNN; or &#xHH;.
// The byte returned for a code point beyond ASCII is 0, a separator.
func entityAt(buf []byte, i int) (byte, int, bool) {
	j := i + 1
	if j >= len(buf) {
		return 0, 0, false
	}
	if buf[j] != '#' {
		k := j
		for k < len(buf) && k-j < 32 && class[buf[k]]&clSym != 0 {
			k++
		}
		if k-j >= 2 && k < len(buf) && buf[k] == ';' && fold[buf[j]] >= 'a' && fold[buf[j]] <= 'z' {
			c := byte(0)
			switch string(buf[j:k]) {
			case "amp":
				c = '&'
			case "lt":
				c = '<'
			case "gt":
				c = '>'
			case "quot":
				c = '"'
			case "apos":
				c = '\''
			}
			return c, k + 1 - i, true
		}
		return 0, 0, false
	}
	j++
	hexa := j < len(buf) && (buf[j] == 'x' || buf[j] == 'X')
	if hexa {
		j++
	}
	v, k := 0, j
	for ; k < len(buf) && k-j < 7; k++ {
		c := buf[k]
		if hexa && class[c]&clHex != 0 {
			v = v*16 + int(unhex(c))
		} else if !hexa && c >= '0' && c <= '9' {
			v = v*10 + int(c-'0')
		} else {
			break
		}
	}
	if k == j || k >= len(buf) || buf[k] != ';' {
		return 0, 0, false
	}
	if v >= 0x80 {
		v = 0
	}
	return byte(v), k + 1 - i, true
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// tokenByte reports whether c may stand inside an escaped token: any
// printable byte, the blank too (html.escape leaves it), not a line end
// or other control byte.
func tokenByte(c byte) bool { return c >= ' ' && c != 0x7f }

// routeEscapes fills lane laneDecoded with the decoded tokens of the text
// segments that hold an escape.
func (sc *scratch) routeEscapes(buf []byte, final bool) {
	l := &sc.lanes[laneDecoded]
	for si, seg := range sc.segs {
		lo, hi := seg[0], seg[1]
		// An escape cut off by the end of what came so far decodes the
		// token up to it: a match there may go on.
		open := si == len(sc.segs)-1 && hi == sc.end && !final
		done := lo // the end of the last token decoded
		pct, amp := lo-1, lo-1
		for {
			// The next '%' and the next '&', each found once.
			if pct < done {
				pct = nextByte(buf, done, hi, '%')
			}
			if amp < done {
				amp = nextByte(buf, done, hi, '&')
			}
			t := min(pct, amp)
			if t >= hi {
				break
			}
			if _, _, ok := escapeAt(buf[:hi], t); !ok && !(open && partialEscape(buf[t:hi])) {
				done = t + 1
				continue
			}
			a := t
			for a > max(done, lo, t-maxEscapeReach) && tokenByte(buf[a-1]) {
				a--
			}
			// To the right: to the token's end, an escape never more than
			// maxEscapeReach bytes back.
			b, last := t, t
			for b < hi && tokenByte(buf[b]) && b-last <= maxEscapeReach {
				if _, n, ok := escapeAt(buf[:hi], b); ok {
					last = b
					b += n
					continue
				}
				b++
			}
			if len(l.sym) > 0 {
				l.add(0, a) // a break: the last token ended before
			}
			for i := a; i < b; {
				c, n, ok := escapeAt(buf[:hi], i)
				if !ok {
					if open && partialEscape(buf[i:hi]) {
						break
					}
					c, n = buf[i], 1
				}
				if class[c]&clSym != 0 {
					l.add(fold[c], i)
				}
				i += n
			}
			done = b
		}
	}
}

// partialEscape reports whether b, which runs to the end of the text so
// far, is the start of an escape that more text could complete.
func partialEscape(b []byte) bool {
	if len(b) == 0 || len(b) > 40 {
		return false
	}
	switch b[0] {
	case '%':
		for _, c := range b[1:] {
			if class[c]&clHex == 0 {
				return false
			}
		}
		return len(b) <= 2
	case '&':
		r := b[1:]
		if len(r) > 0 && r[0] == '#' {
			r = r[1:]
			if len(r) > 0 && (r[0] == 'x' || r[0] == 'X') {
				r = r[1:]
			}
			if len(r) > 7 {
				return false
			}
		} else if len(r) > 32 {
			return false
		}
		for _, c := range r {
			if class[c]&clSym == 0 {
				return false
			}
		}
		return true
	}
	return false
}

func nextByte(buf []byte, from, hi int, c byte) int {
	if k := bytes.IndexByte(buf[from:hi], c); k >= 0 {
		return from + k
	}
	return hi
}

// escapeEnd is where the unit of the decoded lane at p ends: an escape,
// or one byte.
func escapeEnd(buf []byte, p int) int {
	if _, n, ok := escapeAt(buf, p); ok {
		return p + n
	}
	return p + 1
}

// widenDecoded extends [s, e) in the decoded lane over the form's lead
// and trail printed escaped or literally.
func widenDecoded(buf []byte, s, e int, f *formInfo, atStart, atEnd bool) (int, int) {
	if atEnd {
		for k := 0; k < len(f.trail) && e < len(buf); k++ {
			c, n, ok := escapeAt(buf, e)
			if !ok {
				c, n = buf[e], 1
			}
			if c == '+' && n == 1 {
				c = ' ' // a space in a query
			}
			if c != f.trail[k] {
				break
			}
			e += n
		}
	}
	if atStart {
		for k := len(f.lead) - 1; k >= 0 && s > 0; k-- {
			p := s - 1
			for q := max(0, s-12); q < s; q++ {
				if _, n, ok := escapeAt(buf, q); ok && q+n == s {
					p = q
					break
				}
			}
			c, _, ok := escapeAt(buf, p)
			if !ok {
				c = buf[p]
			}
			if c != f.lead[k] {
				break
			}
			s = p
		}
	}
	return s, e
}
