package roomindex

// Bits is a set of claims by opening order, a bit per claim, and how many it holds. The zero Bits
// is empty.
type Bits struct {
	words []uint64
	count int
}

// Add puts claim i in the set.
func (b *Bits) Add(i int) {
	for len(b.words) <= i/64 {
		b.words = append(b.words, 0)
	}
	if bit := uint64(1) << (i % 64); b.words[i/64]&bit == 0 {
		b.words[i/64] |= bit
		b.count++
	}
}

// Has reports whether claim i is in the set; false for a nil Bits.
func (b *Bits) Has(i int) bool {
	return b != nil && i/64 < len(b.words) && b.words[i/64]&(1<<(i%64)) != 0
}

// Count is how many claims the set holds; 0 for a nil Bits.
func (b *Bits) Count() int {
	if b == nil {
		return 0
	}
	return b.count
}
