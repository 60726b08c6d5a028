/* Shared by the library's files only (not part of sparsr.h). */
#ifndef SPARSR_INTERNAL_H
#define SPARSR_INTERNAL_H

/* The message sparsr_last_error(NULL) returns: why the last sparsr_open* of this thread failed. */
void sparsr_set_open_error(const char *msg);

#endif
