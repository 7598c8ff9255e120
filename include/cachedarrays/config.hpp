// How the library is built into a program (docs/design.md "Header-only use").
// Linking cachedarrays::header_only defines CACHEDARRAYS_HEADER_ONLY: every
// header then includes its -inl.hpp implementation, and the functions there
// must be `inline` so that several translation units of one program may
// include them (one definition rule). Linking the compiled
// cachedarrays::cachedarrays leaves the macro empty: the -inl files are
// compiled once, into the library (src/<layer>/<layer>.cpp).
#pragma once

#ifdef CACHEDARRAYS_HEADER_ONLY
#define CACHEDARRAYS_INLINE inline
#else
#define CACHEDARRAYS_INLINE
#endif
