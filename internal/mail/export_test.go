package mail

// FullData gives the external tests of this package the complete template
// data the internal ones render with.
var FullData = fullData
