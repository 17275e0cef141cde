package secretscan

// Eight bytes at a time: each function returns, for each byte of w, its
// high bit set when the byte is in the class. A byte x below 0x80 is at
// least c when x + (0x80-c) has its high bit set: the ge constants are
// 0x80-c in every byte.
const (
	lo7   = 0x7f7f7f7f7f7f7f7f
	high  = 0x8080808080808080
	ones  = 0x0101010101010101
	fold8 = 0x2020202020202020 // ORed in, folds letters to lower case and leaves digits

	ge2b = ones * (0x80 - '+')
	ge30 = ones * (0x80 - '0')
	ge3a = ones * (0x80 - '9' - 1)
	ge61 = ones * (0x80 - 'a')
	ge7b = ones * (0x80 - 'z' - 1)
	ge7f = ones * (0x80 - 0x7f)
)

// equal: bytes of w that are c.
func equal(w uint64, c byte) uint64 {
	z := w ^ ones*uint64(c)
	return ^(((z & lo7) + lo7) | z) & high
}

// symMask: ASCII letters and digits.
func symMask(w uint64) uint64 {
	x := w & lo7
	l := x | fold8
	return ((x+ge30)&^(x+ge3a) | (l+ge61)&^(l+ge7b)) & high &^ w
}

// runMask: base64 characters of either alphabet, not '='.
func runMask(w uint64) uint64 { return symMask(w) | punctMask(w) }

// punctMask: the punctuation of both base64 alphabets.
func punctMask(w uint64) uint64 {
	return equal(w, '+') | equal(w, '/') | equal(w, '-') | equal(w, '_')
}

// mayRun: a superset of runMask, cheaper: with letters folded (x|0x20),
// '+', '-' and '/' are the odd bytes of 0x2b..0x2f, digits 0x30..0x39, '_'
// 0x7f. It also takes a few control bytes and DEL, which the exact tests
// after it turn down.
func mayRun(w uint64) uint64 {
	y := w&lo7 | fold8
	return (mayRunPunct(y) | ((y+ge30)&^(y+ge3a)|(y+ge61)&^(y+ge7b))&high) &^ w
}

// mayRunPunct is mayRun's '+', '-', '/' and '_' (and DEL) of folded bytes
// y (all below 0x80).
func mayRunPunct(y uint64) uint64 {
	return ((y+ge2b)&^(y+ge30)&(y<<7) | (y + ge7f)) & high
}

// runExact is runMask by way of mayRun: the control bytes and DEL that
// mayRun takes are the bytes below 0x20 and 0x7f, which it turns down (a
// byte x below 0x80 is 0x7f when x+1 has its high bit set).
func runExact(w uint64) uint64 {
	x := w & lo7
	return mayRun(w) & (x + ge20) &^ (x + ones)
}

const ge20 = ones * (0x80 - 0x20)

// mayRunSym is a superset of runMask, from symMask(w), sym: the symbols
// and mayRunPunct's bytes.
func mayRunSym(w, sym uint64) uint64 { return sym | mayRunPunct(w&lo7|fold8)&^w }
