/* Compiled into a room library that has no sources yet. */
typedef int kt_empty_translation_unit;
