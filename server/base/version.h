/* version.h - the release, shown by -V and INFO. */
#ifndef RLOCKD_VERSION_H
#define RLOCKD_VERSION_H
#define RLOCKD_VERSION "0.1.0"
#endif
