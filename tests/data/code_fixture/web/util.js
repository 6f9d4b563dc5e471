function slugify(text) {
  return text.toLowerCase().replace(/ /g, "-");
}

class Router {
  route(path) {
    return slugify(path);
  }
}

module.exports = { slugify, Router };
