package secretscan

import "bytes"

// What the start of a line says about it being a line of a hex dump.
const (
	dumpNo = iota
	dumpMaybe
	dumpUndecided // too little of it yet
)

// dumpStart reads the start of a line: a dump line begins, after at most 8
// blanks, with a word of hex digits (an offset, or the first group of an
// od -An dump) followed by a colon or a blank. The answer for a prefix
// never changes from dumpNo as the line grows.
func dumpStart(l []byte, complete bool) int {
	i := 0
	for i < len(l) && (l[i] == ' ' || l[i] == '\t') {
		i++
	}
	if i > 8 {
		return dumpNo
	}
	if i == len(l) {
		if complete {
			return dumpNo
		}
		return dumpUndecided
	}
	j := i
	for j < len(l) && class[l[j]]&clHex != 0 {
		j++
	}
	if j == i || j-i > 16 {
		return dumpNo
	}
	if j == len(l) {
		if complete {
			return dumpNo
		}
		return dumpUndecided
	}
	switch l[j] {
	case ':', ' ', '\t':
		return dumpMaybe
	}
	return dumpNo
}

// parseDump reads buf[ls:le], a complete line, as a line of a hex dump, in
// the layouts of xxd (offset and colon, groups, two blanks, the
// characters), hexdump -C (offset, bytes, |characters|), od (offset, then
// bytes, words or characters; -z adds >characters<) and od -An (no offset:
// then only words, which must all be alike, make it a dump line).
func (sc *scratch) parseDump(buf []byte, ls, le int) (dumpLine, bool) {
	end := le
	if end > ls && buf[end-1] == '\r' {
		end--
	}
	l := buf[ls:end]
	i := 0
	for i < len(l) && (l[i] == ' ' || l[i] == '\t') {
		i++
	}
	j := i
	for j < len(l) && class[l[j]]&clHex != 0 {
		j++
	}
	t1 := j - i
	colon, data := false, i
	switch {
	case j < len(l) && l[j] == ':' && t1 >= 4:
		colon, data = true, j+1
	case t1 >= 6:
		k := j
		for k < len(l) && (l[k] == ' ' || l[k] == '\t') {
			k++
		}
		w := k
		for w < len(l) && l[w] != ' ' && l[w] != '\t' {
			w++
		}
		if w > k && w-k != t1 && groupWord(l[k:w]) {
			data = j // an offset column
		}
	}
	dataEnd, chars := len(l), len(l)
	if colon {
		if k := bytes.Index(l[data:], []byte("  ")); k >= 0 {
			dataEnd, chars = data+k, data+k
			for chars < len(l) && l[chars] == ' ' {
				chars++
			}
		}
	} else if k := bytes.IndexAny(l[data:], "|>"); k >= 0 && len(l) > 0 {
		if last := l[len(l)-1]; l[data+k] == '|' && last == '|' || l[data+k] == '>' && last == '<' {
			dataEnd, chars = data+k, data+k
		}
	}
	toks := sc.toks[:0]
	for k := data; k < dataEnd; {
		for k < dataEnd && (l[k] == ' ' || l[k] == '\t') {
			k++
		}
		w := k
		for w < dataEnd && l[w] != ' ' && l[w] != '\t' {
			w++
		}
		if w > k {
			toks = append(toks, [2]int{k, w})
		}
		k = w
	}
	sc.toks = toks
	if len(toks) == 0 {
		return dumpLine{}, false
	}
	words, width := wordsHex, toks[0][1]-toks[0][0]
	for i, t := range toks {
		w := l[t[0]:t[1]]
		if !groupWord(w) {
			return dumpLine{}, false
		}
		// xxd -e prints a last, partial group shorter.
		partial := colon && i == len(toks)-1 && len(w) < width && len(w)%2 == 0
		if len(w) != width && !partial || !allHex(w) {
			words = wordsNone
		}
	}
	switch {
	case words == wordsHex && width == 6 && allOctal(l[toks[0][0]:toks[len(toks)-1][1]]):
		words = wordsOct // od's default: octal 16-bit words
	case width != 4 && width != 8 && width != 16:
		words = wordsNone
	}
	if !colon && data == i && (words == wordsNone || len(toks) < 2) {
		return dumpLine{}, false // no offset: only a line of like words is a dump line
	}
	return dumpLine{start: ls, end: end, lineEnd: le, data: ls + data, dataEnd: ls + dataEnd, chars: ls + chars, words: uint8(words)}, true
}

// groupWord is a word a dump prints for data: hex digits (bytes, words,
// octal), or one character or a backslash escape (od -c).
func groupWord(w []byte) bool {
	return len(w) <= 16 && allHex(w) || len(w) == 1 || len(w) == 2 && w[0] == '\\'
}

func allHex(w []byte) bool {
	for _, c := range w {
		if class[c]&clHex == 0 {
			return false
		}
	}
	return true
}

func allOctal(w []byte) bool {
	for _, c := range w {
		if (c < '0' || c > '7') && c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}

// routeDump puts a dump line's columns in their lanes, from from on. A
// line that does not follow a dump line starts a dump: the lanes get a
// break first, a symbol no form holds, so no match joins two dumps.
func (sc *scratch) routeDump(buf []byte, d dumpLine, from int) {
	if k := len(sc.dumps); k == 0 || sc.dumps[k-1].next != d.start {
		for i := range sc.lanes {
			if l := &sc.lanes[i]; len(l.sym) > 0 {
				l.add(0, d.start)
			}
		}
	}
	d.next = d.lineEnd + 1
	sc.dumps = append(sc.dumps, d)
	if d.dataEnd > from {
		sc.lanes[laneData].skel(buf, max(d.data, from), d.dataEnd)
	}
	if d.end > from && d.chars < d.end {
		sc.lanes[laneChars].skel(buf, max(d.chars, from), d.end)
	}
	if d.words == wordsNone {
		return
	}
	words := &sc.lanes[laneWords]
	for _, t := range sc.toks {
		a, b := d.start+t[0], d.start+t[1]
		if a < from {
			continue
		}
		w := buf[a:b]
		if d.words == wordsHex {
			// Little-endian: the last byte is printed first.
			for k := len(w) - 2; k >= 0; k -= 2 {
				words.add(fold[w[k]], a)
				words.add(fold[w[k+1]], a)
			}
			continue
		}
		v := 0
		for _, c := range w {
			v = v*8 + int(c-'0')
		}
		for _, c := range []byte{byte(v), byte(v >> 8)} {
			words.add(hexDigits[c>>4], a)
			words.add(hexDigits[c&15], a)
		}
	}
}

const hexDigits = "0123456789abcdef"
