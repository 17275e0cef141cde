package inject

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// folded is one text prepared for matching. fold is the text with invisible
// characters removed, compatibility forms folded (NFKD: fullwidth,
// mathematical, ligatures, circled letters all become ASCII), combining
// marks dropped and look-alike Cyrillic and Greek letters mapped to Latin;
// lower is fold with ASCII letters lowered (same length, so offsets agree).
// offs[i] is the byte offset in the original text of the character that
// produced fold[i]; offs has one extra entry, len(original).
//
// NFKD rather than NFKC: NFKC is NFKD recomposed, and recomposition only
// re-attaches the marks we drop anyway, so for finding ASCII phrases the two
// are the same and NFKD lets "ïgnörè" read as "ignore".
type folded struct {
	fold, lower string
	offs        []int32
	// hidden are bidi and tag characters found: their presence is a finding.
	hidden []Finding
	// tags is the ASCII carried by Unicode tag characters (U+E0020..E007E),
	// the "ASCII smuggling" channel; tagsAt is where the first one was.
	tags   []byte
	tagsAt int
}

func fold(s string) *folded {
	f := &folded{offs: make([]int32, 0, len(s)+1)}
	buf := make([]byte, 0, len(s))
	var bidiSeen, tagSeen bool
	var dec []byte
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		at := i
		i += size
		if r < utf8.RuneSelf {
			buf = append(buf, byte(r))
			f.offs = append(f.offs, int32(at))
			continue
		}
		if r == 0x1F3F4 {
			// A subdivision flag (England, Scotland, Wales) is the black flag
			// followed by a few lowercase tag letters and a cancel tag: an
			// emoji, not hidden text. Keep the flag, skip its tags.
			if n := flagTags(s[i:]); n > 0 {
				buf = append(buf, s[at:i]...)
				for range i - at {
					f.offs = append(f.offs, int32(at))
				}
				i += n
				continue
			}
		}
		switch {
		case isBidi(r):
			if !bidiSeen {
				bidiSeen = true
				f.hidden = append(f.hidden, Finding{Kind: KindHiddenCharacters, Offset: at,
					Detail: "bidirectional control character " + runeName(r) + " (text can display in a different order than it is read)"})
			}
			continue
		case r >= 0xE0000 && r <= 0xE007F:
			if !tagSeen {
				tagSeen = true
				f.tagsAt = at
				f.hidden = append(f.hidden, Finding{Kind: KindHiddenCharacters, Offset: at,
					Detail: "Unicode tag character " + runeName(r) + " (invisible text a model can still read)"})
			}
			if r >= 0xE0020 && r <= 0xE007E {
				f.tags = append(f.tags, byte(r-0xE0000))
			}
			continue
		case isInvisible(r):
			continue
		case r == 0x2028 || r == 0x2029:
			buf = append(buf, '\n')
			f.offs = append(f.offs, int32(at))
			continue
		}
		if l, ok := confusable[r]; ok {
			buf = append(buf, l)
			f.offs = append(f.offs, int32(at))
			continue
		}
		dec = norm.NFKD.AppendString(dec[:0], s[at:i])
		for j := 0; j < len(dec); {
			d, n := utf8.DecodeRune(dec[j:])
			if unicode.Is(unicode.Mn, d) {
				j += n
				continue
			}
			if l, ok := confusable[d]; ok {
				buf = append(buf, l)
				f.offs = append(f.offs, int32(at))
			} else {
				buf = append(buf, dec[j:j+n]...)
				for range n {
					f.offs = append(f.offs, int32(at))
				}
			}
			j += n
		}
	}
	f.offs = append(f.offs, int32(len(s)))
	f.fold = string(buf)
	for i, c := range buf {
		if c >= 'A' && c <= 'Z' {
			buf[i] = c + 'a' - 'A'
		}
	}
	f.lower = string(buf)
	return f
}

// flagTags returns the length of the tag sequence of a subdivision flag
// emoji at the start of s (2 to 7 tag letters or digits, then U+E007F), or 0.
func flagTags(s string) int {
	n, letters := 0, 0
	for n < len(s) {
		r, size := utf8.DecodeRuneInString(s[n:])
		n += size
		switch {
		case r == 0xE007F:
			if letters >= 2 && letters <= 7 {
				return n
			}
			return 0
		case r >= 0xE0061 && r <= 0xE007A, r >= 0xE0030 && r <= 0xE0039:
			letters++
		default:
			return 0
		}
	}
	return 0
}

// isBidi: embeddings, overrides and isolates (U+202A..202E,
// U+2066..2069), which reorder how text displays ("Trojan Source"). The
// implicit marks (LRM, RLM, ALM) are ordinary in right-to-left text and are
// only stripped (isInvisible).
func isBidi(r rune) bool {
	return r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069
}

// isInvisible: characters that render as nothing and can split a word so a
// naive match misses it. Their presence alone is common (emoji joiners,
// byte-order marks), so it is not a finding.
func isInvisible(r rune) bool {
	switch {
	case r >= 0x200B && r <= 0x200F, r == 0x061C, r == 0x2060, r == 0xFEFF, r == 0x00AD, r == 0x180E,
		r >= 0x2061 && r <= 0x2064, r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0, r == 0x034F:
		return true
	}
	return false
}

func runeName(r rune) string {
	const hex = "0123456789ABCDEF"
	b := []byte("U+")
	digits := 4
	if r > 0xFFFF {
		digits = 5
	}
	for i := digits - 1; i >= 0; i-- {
		b = append(b, hex[(r>>(4*uint(i)))&0xF])
	}
	return string(b)
}

// confusable maps Cyrillic and Greek letters that look like Latin ones, the
// usual way to write "іgnоrе" so it survives a byte match (NFKC leaves them
// alone: they are different letters, not different forms).
var confusable = map[rune]byte{
	// Cyrillic
	'а': 'a', 'в': 'b', 'с': 'c', 'ԁ': 'd', 'е': 'e', 'һ': 'h', 'і': 'i', 'ј': 'j', 'к': 'k', 'ӏ': 'l', 'м': 'm',
	'н': 'h', 'о': 'o', 'р': 'p', 'ԛ': 'q', 'ѕ': 's', 'т': 't', 'ս': 'u', 'ѵ': 'v', 'ԝ': 'w', 'х': 'x', 'у': 'y',
	'А': 'A', 'В': 'B', 'С': 'C', 'Е': 'E', 'Н': 'H', 'І': 'I', 'Ј': 'J', 'К': 'K', 'М': 'M', 'О': 'O', 'Р': 'P',
	'Ѕ': 'S', 'Т': 'T', 'Х': 'X', 'Ү': 'Y', 'ү': 'y', 'ɡ': 'g', 'ı': 'i',
	// Greek
	'α': 'a', 'ο': 'o', 'ρ': 'p', 'ν': 'v', 'τ': 't', 'ι': 'i', 'κ': 'k', 'υ': 'u', 'ε': 'e',
	'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'I', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N', 'Ο': 'O', 'Ρ': 'P',
	'Τ': 'T', 'Υ': 'Y', 'Χ': 'X',
}
