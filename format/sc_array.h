/* SPDX-License-Identifier: MIT */
/*
 * sc_array.h - the one growable array of the project: an array of @size-byte
 * elements with room for *cap of them, made larger by doubling. Every module
 * above format/ uses it (format/array.c).
 */
#ifndef SC_ARRAY_H
#define SC_ARRAY_H

#include <stddef.h>

/**
 * sc_grow() - make room in the array *@arr for at least @need elements of
 * @size bytes: its room *@cap doubles (from 16 at least) until it is enough.
 * The array and *@cap are unchanged on failure.
 * Return: 0, or -ENOMEM (not reported: the caller says what it was making).
 */
int sc_grow(void **arr, size_t *cap, size_t need, size_t size);

#endif /* SC_ARRAY_H */
