package payments

import "strings"

// exponents are the ISO 4217 minor-unit exponents that are not 2.
var exponents = map[string]int{
	"BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "ISK": 0, "JPY": 0, "KMF": 0, "KRW": 0, "PYG": 0, "RWF": 0,
	"UGX": 0, "UYI": 0, "VND": 0, "VUV": 0, "XAF": 0, "XOF": 0, "XPF": 0,
	"BHD": 3, "IQD": 3, "JOD": 3, "KWD": 3, "LYD": 3, "OMR": 3, "TND": 3,
	"CLF": 4, "UYW": 4,
}

// MinorUnits is the ISO 4217 exponent of the currency: how many decimal
// digits its minor unit has (2 for EUR and COP, 0 for CLP and JPY, 3 for
// KWD). Money amounts are integers of minor units (the contract's Money).
// The web app's formatter keeps the same table (web/src/i18n.ts).
func MinorUnits(currency string) int {
	if e, ok := exponents[strings.ToUpper(currency)]; ok {
		return e
	}
	return 2
}
