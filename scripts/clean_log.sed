# The lines of a book or notebook log that no reader can act on (sed -E; scripts/build_book.sh, make notebooks):
# terminal colour codes; each kernel's note that it talks to the build over local TCP without encryption (the
# kernels listen on 127.0.0.1); and MyST's and MyST-NB's dump of their whole parser configuration.
s/\x1b\[[0-9;?]*[A-Za-z]//g
/Kernel is running over TCP without encryption/d
/^myst(-nb)? v[0-9][^:]*: (MdParserConfig|NbParserConfig)\(/d
